"""A job's environment through /api/jobs/: names and sizes bounded well under what exec accepts
(before, a 500 KB name was accepted and the job could never start), values write-only."""
import json

import pytest

from scheduler.api.serializers import MAX_ENVIRONMENT_BYTES, MAX_VARIABLE_NAME_LENGTH, MAX_VARIABLE_VALUE_LENGTH
from scheduler.models import Job

SECRETS = {"DATABASE_URL": "postgres://app:s3cret@db/app", "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI"}


@pytest.mark.parametrize(
    "name,message",
    [
        ("A-B", "Invalid variable name 'A-B': letters, digits and underscores, not starting with a digit."),
        ("A=B", "Invalid variable name 'A=B': letters, digits and underscores, not starting with a digit."),
        ("1ST", "Invalid variable name '1ST': letters, digits and underscores, not starting with a digit."),
        ("", "Invalid variable name '': letters, digits and underscores, not starting with a digit."),
        ("CAFÉ", "Invalid variable name 'CAFÉ': letters, digits and underscores, not starting with a digit."),
        ("V" * (MAX_VARIABLE_NAME_LENGTH + 1),
         f"Invalid variable name '{'V' * 64}…': longer than {MAX_VARIABLE_NAME_LENGTH} characters."),
        ("K" * 500_000, f"Invalid variable name '{'K' * 64}…': longer than {MAX_VARIABLE_NAME_LENGTH} characters."),
        ("SBATCH_ACCOUNT", "Invalid variable name 'SBATCH_ACCOUNT': names starting with SLURM_ or SBATCH_ are "
                           "Slurm's (it sets them, and sbatch reads them as its own options)."),
        ("SLURM_JOB_ID", "Invalid variable name 'SLURM_JOB_ID': names starting with SLURM_ or SBATCH_ are "
                         "Slurm's (it sets them, and sbatch reads them as its own options)."),
    ],
    ids=["hyphen", "equals", "digit first", "empty", "not ascii", "one too long", "500 KB", "sbatch option",
         "slurm's own"],
)
def test_an_invalid_variable_name_is_refused_naming_it_and_nothing_is_stored(submit, alice, name, message):
    response = submit(alice, environment={name: "x"})
    assert response.status_code == 400
    assert response.json() == {"environment": [message]}
    assert len(response.content) < 1000  # a 500 KB name is not echoed back
    assert not Job.objects.exists()


def test_a_value_too_long_is_refused_naming_its_variable(submit, alice):
    response = submit(alice, environment={"SHORT": "x", "LONG": "x" * (MAX_VARIABLE_VALUE_LENGTH + 1)})
    assert response.status_code == 400
    assert response.json() == {"environment": {"LONG": [
        f"Ensure this field has no more than {MAX_VARIABLE_VALUE_LENGTH} characters."
    ]}}
    assert not Job.objects.exists()


def test_an_environment_larger_than_the_total_is_refused_with_its_size(submit, alice):
    many = {f"V{i:02d}": "x" * MAX_VARIABLE_VALUE_LENGTH for i in range(17)}  # 17 x 4,005 bytes
    response = submit(alice, environment=many)
    assert response.status_code == 400
    assert response.json() == {"environment": [
        f"The variables take 68085 bytes (NAME=value in UTF-8, each); at most {MAX_ENVIRONMENT_BYTES}."
    ]}
    assert not Job.objects.exists()


def test_the_largest_environment_is_accepted(submit, alice):
    """Up to the limits: the longest name, the longest value, the total just under its limit."""
    name = "N" * MAX_VARIABLE_NAME_LENGTH
    environment = {name: "v" * MAX_VARIABLE_VALUE_LENGTH, **{f"V{i:02d}": "x" * MAX_VARIABLE_VALUE_LENGTH
                                                            for i in range(14)}, "_9": ""}
    response = submit(alice, environment=environment)
    assert response.status_code == 201, response.content
    assert Job.objects.get().environment == environment


def test_environment_values_are_never_shown_on_read_to_anyone(submit, client_for, alice, staff):
    """The owner and staff see the names, each with null: values are write-only."""
    created = submit(alice, environment=SECRETS)
    assert created.status_code == 201
    hidden = {"DATABASE_URL": None, "AWS_SECRET_ACCESS_KEY": None}
    assert created.json()["environment"] == hidden
    job_id = created.json()["id"]
    for reader in (alice, staff):
        client = client_for(reader)
        assert client.get(f"/api/jobs/{job_id}/").json()["environment"] == hidden
        assert client.get("/api/jobs/").json()["results"][0]["environment"] == hidden
        for secret in SECRETS.values():
            assert secret not in client.get("/api/jobs/").content.decode()
    assert Job.objects.get().environment == SECRETS


def test_a_replayed_submission_does_not_show_the_values_either(submit, alice):
    first = submit(alice, environment=SECRETS, headers={"Idempotency-Key": "k1"})
    replay = submit(alice, environment=SECRETS, headers={"Idempotency-Key": "k1"})
    assert replay.status_code == 201 and replay.headers["Idempotent-Replayed"] == "true"
    assert replay.json()["id"] == first.json()["id"]
    assert json.dumps(SECRETS["DATABASE_URL"]) not in replay.content.decode()
