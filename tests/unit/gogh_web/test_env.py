"""Settings inputs: the secret key is made once and kept; flags and lists parse as documented."""
import json
import logging
import os
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from kombu import Connection

from gogh_web import broker_transport, env
from gogh_web.celery import app
from gogh_web.celery_config import EMBEDDED_BROKER, broker_config


def test_secret_key_is_generated_once_and_private(tmp_path, monkeypatch):
    monkeypatch.delenv("DJANGO_SECRET_KEY", raising=False)
    first = env.secret_key(tmp_path)
    assert len(first) >= 50
    assert env.secret_key(tmp_path) == first
    assert (tmp_path / "secret_key").stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["secret_key"]


def test_secret_key_from_environment_wins(tmp_path, monkeypatch):
    monkeypatch.setenv("DJANGO_SECRET_KEY", "given")
    assert env.secret_key(tmp_path) == "given"
    assert not (tmp_path / "secret_key").exists()


def test_flags_and_lists(monkeypatch):
    for word, expected in [("1", True), ("TRUE", True), ("on", True), ("0", False), ("no", False)]:
        monkeypatch.setenv("GOGH_X", word)
        assert env.flag("GOGH_X") is expected
    monkeypatch.setenv("GOGH_X", "")
    assert env.flag("GOGH_X", default=True) is True
    monkeypatch.setenv("GOGH_HOSTS", " a.example , b ,,")
    assert env.csv_list("GOGH_HOSTS", "x") == ["a.example", "b"]


def test_embedded_broker_keeps_everything_under_var(tmp_path):
    config = broker_config("filesystem://", tmp_path)
    options = config["broker_transport_options"]
    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        assert options[key].startswith(str(tmp_path))
    assert config["result_backend"] == f"file://{tmp_path / 'celery' / 'results'}"


def test_the_embedded_broker_names_a_host_so_kombu_does_not_warn_at_each_start(tmp_path, caplog):
    """kombu warned "No hostname was supplied" in every worker, beat and web process of the demo."""
    config = broker_config(EMBEDDED_BROKER, tmp_path)
    assert config["broker_url"].startswith(EMBEDDED_BROKER)
    with caplog.at_level(logging.WARNING, logger="kombu"):
        Connection(config["broker_url"], transport=config["broker_transport"],
                   transport_options=config["broker_transport_options"]).info()
    assert caplog.messages == []


def test_the_embedded_broker_shows_a_worker_no_message_before_it_is_written_whole(tmp_path, monkeypatch):
    """kombu's own filesystem transport creates the message file, then writes it: a worker listing
    the queue in between took an empty file and failed to decode it (the message lost). Ours
    renames a whole file into place: just before that rename, a worker finds the queue empty."""
    config = broker_config(EMBEDDED_BROKER, tmp_path)

    def connect():
        return Connection(config["broker_url"], transport=config["broker_transport"],
                          transport_options=config["broker_transport_options"])

    seen_before_rename = []
    rename = os.replace

    def taking_a_look_first(source, target):
        with connect() as worker, worker.SimpleQueue("whole-message") as queue:
            with pytest.raises(queue.Empty):
                queue.get(timeout=0)
            seen_before_rename.append(Path(source).read_bytes())
        rename(source, target)

    monkeypatch.setattr(broker_transport.os, "replace", taking_a_look_first)
    payload = {"round": 7, "pad": "x" * 100_000}
    with connect() as client, client.SimpleQueue("whole-message") as queue:
        queue.put(payload)
    assert len(seen_before_rename) == 1
    assert json.loads(seen_before_rename[0])["properties"]["delivery_info"]["routing_key"] == "whole-message"  # whole
    with connect() as worker, worker.SimpleQueue("whole-message") as queue:
        message = queue.get(timeout=1)
        assert message.payload == payload
        message.ack()
    queue_folder = Path(config["broker_transport_options"]["data_folder_in"])
    assert [path.name for path in queue_folder.iterdir()] == []  # no partial file left behind


def test_the_web_and_the_workers_use_the_whole_message_transport():
    with app.connection_for_write() as connection:
        assert isinstance(connection.transport, broker_transport.Transport)


def test_server_broker_keeps_its_url_for_results(tmp_path):
    assert broker_config("redis://h:6379/0", tmp_path) == {
        "broker_url": "redis://h:6379/0",
        "result_backend": "redis://h:6379/0",
    }
    assert not (tmp_path / "celery").exists()


def test_slurm_pending_timeout_defaults_to_five_minutes_and_a_bad_value_stops_the_start(tmp_path):
    executor_environment = env.executor_environment
    assert executor_environment({}, tmp_path)["slurm"]["pending_timeout_s"] == 300.0
    assert executor_environment({"GOGH_SLURM_PENDING_TIMEOUT_S": "45"}, tmp_path)["slurm"]["pending_timeout_s"] == 45.0
    for bad in ("5", "soon", "-1"):
        with pytest.raises(ImproperlyConfigured, match="GOGH_SLURM_PENDING_TIMEOUT_S"):
            executor_environment({"GOGH_SLURM_PENDING_TIMEOUT_S": bad}, tmp_path)
