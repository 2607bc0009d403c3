"""import_predictor / export_predictor on bad input: an export file is untrusted, so a bad one is
one CommandError "FILE: not a GOGH predictor export (reason)" with nothing stored and no file
written; an import is promoted on its score on the local catalog, never on the score it states."""
import copy
import io
import math
import pickle
import zipfile
from datetime import datetime

import pytest
import torch
from django.core.management import call_command
from django.core.management.base import CommandError

from catalog.models import PredictorVersion
from catalog.predictors import PerformancePredictor
from catalog.services import predictors as services
from catalog.services.predictors_store import PredictorFileError, weights_save

from .db_slice import load_slice

pytestmark = pytest.mark.django_db


@pytest.fixture
def var(settings, tmp_path):
    settings.VAR_DIR = tmp_path / "var"
    return settings.VAR_DIR


@pytest.fixture(scope="module")
def export_state(catalog):
    """A valid structured model's state (the payload's "state")."""
    return PerformancePredictor(architecture="structured").fit(catalog).state_dict()


def payload(valid, **changes):
    """An export of the valid state `valid`, with `changes` to its keys."""
    return {"format": services.EXPORT_FORMAT, "name": "p1", "architecture": "structured",
            "hyperparameters": valid["params"], "metrics": {"val_mae": 0.05}, "state": copy.deepcopy(valid),
            **changes}


def saved(obj) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def assert_nothing_stored(root):
    assert PredictorVersion.objects.count() == 0
    assert not [p for p in root.rglob("*") if p.is_file()]


@pytest.mark.parametrize("name", ["../../../x", "p9", "p" * 500])
def test_a_name_other_than_p1_p2_is_refused_before_anything_is_written(var, tmp_path, export_state, name):
    with pytest.raises(ValueError, match=r"x.pt: not a GOGH predictor export \(name .* is not one of p1, p2\)"):
        services.predictor_import(data=saved(payload(export_state, name=name)), fine_tune=False, source="x.pt")
    assert_nothing_stored(tmp_path)


def test_weights_are_never_written_outside_the_predictors_folder(var, tmp_path, export_state):
    model = PerformancePredictor.from_state_dict(export_state)
    with pytest.raises(PredictorFileError, match="does not stay in"):
        weights_save(model, "../../escape")
    assert not list(tmp_path.rglob("*.pt"))


def test_no_fine_tune_is_promoted_on_its_local_score_not_on_the_score_it_states(var, export_state):
    """A file claiming val_mae 0 whose snapshot says every pair runs at full speed scores
    badly on the local catalog and stays a candidate."""
    load_slice()
    active = services.predictor_train(architecture="structured")
    lying = payload(export_state, metrics={"val_mae": 0.0})
    lying["state"]["catalog"]["rho"].fill_(1.0)
    version = services.predictor_import(data=saved(lying), fine_tune=False, source="lying.pt")
    assert version.status == "candidate" and version.val_mae > active.val_mae
    assert version.metrics["exported_metrics"] == {"val_mae": 0.0} and version.metrics["validation_workloads"]
    active.refresh_from_db()
    assert active.status == "active"


def test_an_honest_import_without_local_data_becomes_active_with_no_score(var, export_state):
    """A fresh cluster (no measurements) can adopt another cluster's model as it is."""
    version = services.predictor_import(data=saved(payload(export_state)), fine_tune=False, source="ok.pt")
    assert version.status == "active" and version.val_mae is None


def _zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("readme.txt", "hello")
    return buffer.getvalue()


def _tensor_state(state):
    state["catalog"]["rho"] = state["catalog"]["rho"][:, :-1]
    return state


BAD_FILES = {
    "empty": lambda s: b"",
    "zip": lambda s: _zip(),
    "text": lambda s: b"workload,gpu_type,throughput\nA3C,v100,1.0\n",
    "pickle with code": lambda s: pickle.dumps(datetime(2020, 1, 1)),
    "a list": lambda s: saved([1, 2, 3]),
    "no state": lambda s: saved({k: v for k, v in payload(s).items() if k != "state"}),
    "empty state": lambda s: saved(payload(s, state={})),
    "extra params key": lambda s: saved(payload(s, state={**s, "params": {**s["params"], "extra": 1}})),
    "metrics None": lambda s: saved(payload(s, metrics=None)),
    "val_mae NaN": lambda s: saved(payload(s, metrics={"val_mae": math.nan})),
    "truncated": lambda s: saved(payload(s))[:2000],
    "architecture nope": lambda s: saved(payload(s, architecture="nope")),
    "state of another architecture": lambda s: saved(payload(s, architecture="rnn")),
    "hidden -1": lambda s: saved(payload(s, state={**s, "params": {**s["params"], "hidden": -1}})),
    "all-NaN tau": lambda s: saved(payload(s, state={
        **s, "catalog": {**s["catalog"], "tau": torch.full_like(s["catalog"]["tau"], math.nan)}
    })),
    "rho of the wrong shape": lambda s: saved(payload(s, state=_tensor_state(copy.deepcopy(s)))),
}


@pytest.mark.parametrize("kind", BAD_FILES)
def test_a_malformed_file_is_one_command_error_and_stores_nothing(var, tmp_path, export_state, kind):
    path = tmp_path / "bad.pt"
    path.write_bytes(BAD_FILES[kind](export_state))
    with pytest.raises(CommandError, match=r"^bad.pt: not a GOGH predictor export \(.+\)$"):
        call_command("import_predictor", str(path), "--no-fine-tune")
    path.unlink()
    assert_nothing_stored(tmp_path)


def test_fine_tuning_on_an_empty_catalog_says_what_to_do(var, tmp_path, export_state):
    path = tmp_path / "ok.pt"
    path.write_bytes(saved(payload(export_state)))
    with pytest.raises(CommandError, match="load the reference catalog .* or import the weights as they are"):
        call_command("import_predictor", str(path))


def test_export_refuses_bad_destinations_and_ids_before_anything(var, tmp_path):
    for args, message in ((["--id", "0"], "'0' is not a whole number greater than 0"),
                          ([], "no folder")):
        target = tmp_path / "missing" / "p1.pt" if not args else tmp_path / "p1.pt"
        with pytest.raises(CommandError, match=message):
            call_command("export_predictor", str(target), *args)
    with pytest.raises(CommandError, match="is a directory"):
        call_command("export_predictor", str(tmp_path))


def test_export_of_a_version_whose_weights_file_is_gone_is_a_command_error(var, tmp_path):
    load_slice()
    version = services.predictor_train(architecture="structured")
    (var / "predictors" / version.weights_file).unlink()
    with pytest.raises(CommandError, match="cannot export .* is missing"):
        call_command("export_predictor", str(tmp_path / "p1.pt"), "--id", str(version.pk))
    assert not (tmp_path / "p1.pt").exists()
