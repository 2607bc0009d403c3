"""The Slurm parsers on recorded output of the real cluster and on edits of it: every state
word, wait status and gres form they map, and what they refuse (an ExecutorError naming it)."""
import copy
import json

import pytest

from scheduler.executors.base import (
    CANCELLED,
    FAILED,
    NODE_FAIL,
    PENDING,
    PREEMPTED,
    RUNNING,
    SUCCEEDED,
    TIMEOUT,
    ExecutorError,
    NodeStatus,
    RunStatus,
)
from scheduler.executors.slurm.parse import parse_sacct, parse_sinfo, parse_squeue

from .conftest import recorded


def squeue_with(**fields) -> str:
    """The recorded squeue output reduced to its failed job (gogh-106), with `fields` changed."""
    document = json.loads(recorded("squeue.json"))
    document["jobs"] = [{**document["jobs"][5], **fields}]
    return json.dumps(document)


def one_run(**fields) -> RunStatus:
    (run,) = parse_squeue(squeue_with(**fields), "gogh")
    return run


def sinfo_with(**fields) -> str:
    document = json.loads(recorded("sinfo.json"))
    document["nodes"] = [{**document["nodes"][2], **fields}]
    return json.dumps(document)


def one_node(**fields) -> NodeStatus:
    (node,) = parse_sinfo(sinfo_with(**fields))
    return node


# sinfo


def test_sinfo_reads_each_node_its_gpus_by_type_and_its_shards_per_gpu():
    assert parse_sinfo(recorded("sinfo.json")) == [
        NodeStatus(name="n-k80", up=True, gpus={"k80": 4}, shards_per_gpu=2),
        NodeStatus(name="n-p100", up=True, gpus={"p100": 4}, shards_per_gpu=2),
        NodeStatus(name="n-v100", up=True, gpus={"v100": 4}, shards_per_gpu=2),
    ]


def test_a_drained_node_is_not_up_and_says_the_operators_reason():
    nodes = {node.name: node for node in parse_sinfo(recorded("sinfo-drained.json"))}
    assert nodes["n-k80"] == NodeStatus(name="n-k80", up=False, gpus={"k80": 4}, reason="fan broken",
                                        shards_per_gpu=2)
    assert nodes["n-p100"].up and nodes["n-v100"].up


@pytest.mark.parametrize("state, flags, up", [
    ("idle", [], True),
    ("allocated", [], True),
    ("mixed", ["COMPLETING"], True),
    ("idle", ["DRAIN"], False),
    ("mixed", ["DRAIN"], False),  # draining: its jobs run on, it takes no new ones
    ("down", [], False),
    ("down", ["NOT_RESPONDING"], False),
    ("idle", ["NOT_RESPONDING"], False),
    ("idle", ["FAIL"], False),
    ("idle", ["MAINTENANCE"], False),
    ("idle", ["INVALID_REG"], False),
    ("future", [], False),
    ("unknown", [], False),
    ("error", [], False),
])
def test_a_node_is_up_unless_its_state_or_a_flag_says_it_runs_nothing_new(state, flags, up):
    node = one_node(state=state, state_flags=flags, reason="")
    assert node.up is up
    assert node.reason == ("" if up else "+".join([state, *flags]))  # no reason given: the state says it


def test_an_up_node_has_no_reason_even_if_slurm_kept_an_old_one():
    assert one_node(state="idle", state_flags=[], reason="was broken").reason == ""


@pytest.mark.parametrize("gres, gpus, shards_per_gpu", [
    ("gpu:v100:4,shard:v100:8", {"v100": 4}, 2),
    ("gpu:v100:2(S:0-1),gpu:a100:2(S:0,1),shard:v100:12", {"v100": 2, "a100": 2}, 3),
    ("gpu:4", {"": 4}, 0),  # an untyped GPU: the gres type map can name it
    ("gpu:v100:2,gpu:v100:2", {"v100": 4}, 0),
    ("mps:v100:400,gpu:v100:4", {"v100": 4}, 0),
    ("", {}, 0),
    ("shard:8", {}, 0),
])
def test_a_nodes_gres_list_gives_its_gpus_by_type(gres, gpus, shards_per_gpu):
    node = one_node(gres=gres)
    assert (node.gpus, node.shards_per_gpu) == (gpus, shards_per_gpu)


def test_a_partition_keeps_its_nodes_only():
    document = json.loads(recorded("sinfo.json"))
    document["nodes"][0]["partitions"] = ["other"]
    document["nodes"][1]["partitions"] = ["other", "gpu"]
    assert [node.name for node in parse_sinfo(json.dumps(document), partition="gpu")] == ["n-p100", "n-v100"]
    assert [node.name for node in parse_sinfo(json.dumps(document))] == ["n-k80", "n-p100", "n-v100"]


@pytest.mark.parametrize("field", ["name", "state", "state_flags", "gres", "reason"])
def test_sinfo_without_a_field_it_reads_is_an_error_naming_it(field):
    document = json.loads(recorded("sinfo.json"))
    del document["nodes"][1][field]
    with pytest.raises(ExecutorError, match=f"no field '{field}'") as caught:
        parse_sinfo(json.dumps(document))
    assert caught.value.command == "sinfo --json"


def test_state_flags_that_are_not_a_list_are_an_error():
    with pytest.raises(ExecutorError, match="node n-v100: state_flags 'DRAIN' is not a list"):
        one_node(state_flags="DRAIN")


@pytest.mark.parametrize("gres", ["gpu:v100:x", "gpu", "gpu:v100:4:1", 4])
def test_a_gres_the_parser_cannot_read_is_an_error_naming_the_node(gres):
    with pytest.raises(ExecutorError, match="node n-v100: gres"):
        parse_sinfo(sinfo_with(gres=gres))


@pytest.mark.parametrize("text, says", [
    ("", "not JSON"),
    ("sinfo: error: slurm_load_node: Unable to contact slurm controller", "not JSON"),
    ('{"nodes": {}}', "no list 'nodes'"),
    ("[]", "no list 'nodes'"),
    ('{"nodes": [], "errors": [{"error": "Unable to contact slurm controller"}]}', "Unable to contact"),
])
def test_sinfo_output_that_is_not_its_json_is_an_error(text, says):
    with pytest.raises(ExecutorError, match=says):
        parse_sinfo(text)


# squeue


def test_squeue_reads_every_job_the_recorded_cluster_had():
    runs = parse_squeue(recorded("squeue.json"), "gogh")
    assert runs == [
        RunStatus(external_id="1", job_id=101, state=RUNNING, node="n-v100", gpu_indexes=(0, 1),
                  native_state="RUNNING", user="root", started_at=1796209663.0),
        RunStatus(external_id="2", job_id=102, state=RUNNING, node="n-p100", gpu_indexes=(0,), shared=True,
                  native_state="RUNNING", user="root", started_at=1796209663.0),
        RunStatus(external_id="3", job_id=103, state=RUNNING, node="n-p100", gpu_indexes=(0,), shared=True,
                  native_state="RUNNING", user="root", started_at=1796209663.0),
        RunStatus(external_id="4", job_id=None, state=RUNNING, node="n-k80", gpu_indexes=(0,),
                  native_state="RUNNING", user="root", started_at=1796209663.0),
        RunStatus(external_id="5", job_id=105, state=PENDING, reason="Resources", native_state="PENDING",
                  user="root"),
        RunStatus(external_id="6", job_id=106, state=FAILED, node="n-p100", exit_code=3, reason="NonZeroExitCode",
                  native_state="FAILED", user="root", started_at=1796209663.0, ended_at=1796209664.0),
    ]


@pytest.mark.parametrize("native, state", [
    ("PENDING", PENDING), ("CONFIGURING", PENDING), ("REQUEUED", PENDING), ("REQUEUE_HOLD", PENDING),
    ("REQUEUE_FED", PENDING), ("RESIZING", PENDING), ("POWER_UP_NODE", PENDING),
    ("RUNNING", RUNNING), ("COMPLETING", RUNNING), ("SUSPENDED", RUNNING), ("STOPPED", RUNNING),
    ("SIGNALING", RUNNING), ("STAGE_OUT", RUNNING),
    ("COMPLETED", SUCCEEDED), ("FAILED", FAILED), ("OUT_OF_MEMORY", FAILED), ("DEADLINE", FAILED),
    ("CANCELLED", CANCELLED), ("TIMEOUT", TIMEOUT), ("NODE_FAIL", NODE_FAIL), ("BOOT_FAIL", NODE_FAIL),
    ("PREEMPTED", PREEMPTED),
])
def test_slurms_job_states_in_gognhs_words_keeping_slurms(native, state):
    run = one_run(job_state=native)
    assert (run.state, run.native_state) == (state, native)


def test_an_unknown_job_state_is_an_error_naming_the_job_and_the_word():
    with pytest.raises(ExecutorError, match="job 6: unknown job_state 'LAUNCHED'"):
        one_run(job_state="LAUNCHED")
    with pytest.raises(ExecutorError, match=r"job 6: unknown job_state \['RUNNING'\]"):
        one_run(job_state=["RUNNING"])  # a later schema's shape, not 22.05's


@pytest.mark.parametrize("field", ["job_id", "name", "job_state", "state_reason", "nodes", "gres_detail",
                                   "exit_code", "start_time", "end_time", "user_name"])
def test_a_job_without_a_field_the_parser_reads_is_an_error_naming_it(field):
    document = json.loads(recorded("squeue.json"))
    del document["jobs"][3][field]
    with pytest.raises(ExecutorError, match=f"no field '{field}'") as caught:
        parse_squeue(json.dumps(document), "gogh")
    assert caught.value.command == "squeue --json"


@pytest.mark.parametrize("wait_status, exit_code, reason", [
    (0, 0, "NonZeroExitCode"),
    (768, 3, "NonZeroExitCode"),
    (19200, 75, "NonZeroExitCode"),
    (9, None, "NonZeroExitCode; killed by signal 9 (SIGKILL)"),
    (15, None, "NonZeroExitCode; killed by signal 15 (SIGTERM)"),
    (0x80 | 11, None, "NonZeroExitCode; killed by signal 11 (SIGSEGV)"),  # with a core dump
])
def test_an_ended_runs_exit_status_comes_from_the_wait_status(wait_status, exit_code, reason):
    run = one_run(exit_code=wait_status)
    assert (run.exit_code, run.reason) == (exit_code, reason)


def test_a_signal_is_the_whole_reason_when_slurm_gives_none():
    assert one_run(exit_code=9, state_reason="None").reason == "killed by signal 9 (SIGKILL)"


def test_a_run_that_has_not_ended_has_no_exit_status_nor_end():
    """squeue says exit_code 0 and end_time = the time limit's end for a running job."""
    run = one_run(job_state="RUNNING", exit_code=0, end_time=1796213263, state_reason="None")
    assert (run.exit_code, run.ended_at, run.started_at, run.reason) == (None, None, 1796209663.0, "")


def test_a_pending_runs_start_is_none_even_with_slurms_estimate():
    run = one_run(job_state="PENDING", start_time=1796300000, end_time=0)
    assert (run.started_at, run.ended_at) == (None, None)


def test_a_run_cancelled_before_it_started_has_no_start():
    run = one_run(job_state="CANCELLED", start_time=0, end_time=1796209664, nodes="", exit_code=0)
    assert (run.state, run.started_at, run.ended_at, run.node) == (CANCELLED, None, 1796209664.0, None)


@pytest.mark.parametrize("exit_code", [-1, "768", None, 1.5])
def test_an_exit_code_that_is_not_a_wait_status_is_an_error(exit_code):
    with pytest.raises(ExecutorError, match="job 6: exit_code"):
        one_run(exit_code=exit_code)


@pytest.mark.parametrize("field", ["start_time", "end_time"])
def test_a_time_that_is_not_epoch_seconds_is_an_error(field):
    with pytest.raises(ExecutorError, match="job 6: time '2026-12-02' is not epoch seconds"):
        one_run(**{field: "2026-12-02"})


@pytest.mark.parametrize("detail, indexes, shared", [
    (["gpu:v100:2(IDX:0-1)"], (0, 1), False),
    (["gpu:v100:3(IDX:0,2-3)"], (0, 2, 3), False),
    (["gpu:4(IDX:0-3)"], (0, 1, 2, 3), False),
    (["shard:1(IDX:0)"], (0,), True),
    (["shard:v100:2(IDX:1)"], (1,), True),
    (["gpu:v100:0(IDX:N/A)"], (), False),
    (["gpu:v100:1(IDX:2)", "gpu:v100:1(IDX:0)"], (0, 2), False),
    (["mps:100(IDX:3)", "gpu:v100:1(IDX:1)"], (1,), False),
    ([], (), False),
])
def test_the_gpu_indexes_a_run_holds_come_from_its_gres_detail(detail, indexes, shared):
    run = one_run(job_state="RUNNING", gres_detail=detail)
    assert (run.gpu_indexes, run.shared) == (indexes, shared)


@pytest.mark.parametrize("detail", [["gpu:v100:1(IDX:x)"], ["gpu:v100:2(IDX:0-)"], "gpu:v100:1(IDX:0)", [3]])
def test_gres_detail_the_parser_cannot_read_is_an_error(detail):
    with pytest.raises(ExecutorError, match="job 6: gres_detail"):
        one_run(gres_detail=detail)


@pytest.mark.parametrize("prefix, name, job_id", [
    ("gogh", "gogh-106", 106),
    ("gogh", "gogh-0", 0),
    ("gogh", "gogh-106a", None),
    ("gogh", "gogh-", None),
    ("gogh", "my-gogh-106", None),
    ("gogh", "gogh-١٠٦", None),  # digits, but not ASCII ones
    ("h1t", "gogh-106", None),
    ("a.b", "aXb-1", None),
    ("a.b", "a.b-1", 1),
])
def test_a_run_is_gohgs_when_its_name_is_the_prefix_and_a_job_id(prefix, name, job_id):
    (run,) = parse_squeue(squeue_with(name=name), prefix)
    assert run.job_id == job_id


@pytest.mark.parametrize("text, says", [
    ("", "not JSON"),
    ('{"jobs": null}', "no list 'jobs'"),
    ('{"jobs": ["gogh-1"]}', "not an object"),
])
def test_squeue_output_that_is_not_its_json_is_an_error(text, says):
    with pytest.raises(ExecutorError, match=says):
        parse_squeue(text, "gogh")


def test_2000_jobs_parse_each_as_its_own_run():
    """A cluster-sized answer (the size bench_executor_sync measures the sync at: its figures,
    not a timed test, say how fast) gives every job its own run, ids and names kept apart."""
    document = json.loads(recorded("squeue.json"))
    jobs = []
    for number in range(2000):
        job = copy.deepcopy(document["jobs"][number % len(document["jobs"])])
        job.update(job_id=1000 + number, name=f"gogh-{number}")
        jobs.append(job)
    runs = parse_squeue(json.dumps({**document, "jobs": jobs}), "gogh")
    assert len(runs) == 2000 and runs[-1].job_id == 1999
    assert sorted(run.job_id for run in runs) == list(range(2000))


# sacct


def test_sacct_reads_each_ended_job_of_the_jobcomp_file():
    runs = parse_sacct(recorded("sacct.txt"), "gogh")
    assert [(run.external_id, run.job_id, run.state, run.node, run.exit_code) for run in runs] == [
        ("6", 106, FAILED, "n-p100", 3),
        ("1", 101, CANCELLED, "n-v100", 0),
        ("2", 102, CANCELLED, "n-p100", 0),
        ("3", 103, CANCELLED, "n-p100", 0),
        ("4", None, CANCELLED, "n-k80", 0),
        ("5", 105, CANCELLED, None, 0),
    ]
    failed = runs[0]
    assert failed.native_state == "FAILED" and failed.reason == ""
    assert failed.ended_at - failed.started_at == 1.0


def test_sacct_lines_steps_cancellers_and_signals():
    text = "\n".join([
        "12|gogh-7|CANCELLED by 0|n-v100|2026-12-02T11:07:43|2026-12-02T11:07:46|0:15",
        "12.batch|batch|CANCELLED|n-v100|2026-12-02T11:07:43|2026-12-02T11:07:46|0:15",
        "12.0|python|COMPLETED|n-v100|2026-12-02T11:07:43|2026-12-02T11:07:46|0:0",
        "13|gogh-8|FAILED|n-v100|2026-12-02T11:08:40|2026-12-02T11:08:42|75:0",
        "14|gogh-9|NODE_FAIL|None assigned|Unknown|Unknown|0:0",
        "",
    ])
    cancelled, resumable, lost = parse_sacct(text, "gogh")
    assert (cancelled.external_id, cancelled.state, cancelled.exit_code, cancelled.reason) == (
        "12", CANCELLED, None, "by 0; killed by signal 15 (SIGTERM)")
    assert (resumable.state, resumable.exit_code, resumable.native_state) == (FAILED, 75, "FAILED")
    assert (lost.state, lost.node, lost.started_at, lost.ended_at) == (NODE_FAIL, None, None, None)


def test_a_job_id_listed_twice_is_its_last_line():
    text = ("7|gogh-1|COMPLETED|n-v100|2026-12-02T11:00:00|2026-12-02T11:00:01|0:0\n"
            "7|gogh-2|FAILED|n-k80|2026-12-02T12:00:00|2026-12-02T12:00:01|3:0\n")
    (run,) = parse_sacct(text, "gogh")
    assert (run.job_id, run.state, run.exit_code) == (2, FAILED, 3)


def test_a_run_sacct_still_calls_running_has_neither_exit_status_nor_end():
    (run,) = parse_sacct("7|gogh-1|RUNNING|n-v100|2026-12-02T11:00:00|Unknown|0:0", "gogh")
    assert (run.state, run.exit_code, run.ended_at) == (RUNNING, None, None)


@pytest.mark.parametrize("line, says", [
    ("7|gogh-1|COMPLETED|n-v100|2026-12-02T11:00:00|2026-12-02T11:00:01", "line 1: 6 fields, not 7"),
    ("7|gogh-1|COMPLETED|n|v100|2026-12-02T11:00:00|2026-12-02T11:00:01|0:0", "line 1: 8 fields, not 7"),
    ("x7|gogh-1|COMPLETED|n-v100|2026-12-02T11:00:00|2026-12-02T11:00:01|0:0", "job id 'x7' is not a number"),
    ("7|gogh-1|DONE|n-v100|2026-12-02T11:00:00|2026-12-02T11:00:01|0:0", "job 7: unknown State 'DONE'"),
    ("7|gogh-1|COMPLETED|n-v100|2026-12-02T11:00:00|2026-12-02T11:00:01|0", "job 7: ExitCode '0'"),
    ("7|gogh-1|COMPLETED|n-v100|2026-12-02T11:00:00|2026-12-02T11:00:01|a:b", "job 7: ExitCode 'a:b'"),
    ("7|gogh-1|COMPLETED|n-v100|yesterday|2026-12-02T11:00:01|0:0", "job 7: time 'yesterday'"),
])
def test_sacct_output_the_parser_does_not_know_is_an_error_naming_it(line, says):
    with pytest.raises(ExecutorError, match=says) as caught:
        parse_sacct(line, "gogh")
    assert caught.value.command.startswith("sacct -c -P -n -o jobid,jobname,state")
