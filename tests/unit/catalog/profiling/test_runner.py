"""Real tiny training steps on the CPU, and failures kept as results: the suite goes on."""
import os

import pytest

from catalog.profiling import cases, models, runner

from .conftest import TINY, case_of


def _ok(result):
    assert "error" not in result, result
    assert 0 < result["throughput"] and result["ci_low"] <= result["throughput"] <= result["ci_high"]
    assert result["steps_timed"] > 0
    assert result["memory_gb"] is None and result["power_w"] is None  # a CPU has neither reading


def test_cases_alone_in_pairs_and_data_parallel_run_real_steps():
    chosen = cases.select(["ResNet-50 (batch size 64)", "GPT-2 (batch size 8)",
                           "ResNet-50 (batch size 64) + LM (batch size 20)", "LM (batch size 20) x2"])
    results = runner.run_suite(chosen, TINY, timeout_s=60)
    assert [r["case"] for r in results] == [c.name for c in chosen]
    for result in results:
        _ok(result)
    pair, ranks = results[2], results[3]
    assert pair["partner"] == "LM (batch size 20)" and pair["partner_throughput"] > 0
    assert ranks["num_gpus"] == 2


def test_failures_are_recorded_and_the_next_case_still_runs(broken_families):
    chosen = [case_of("Broken"), case_of("TooBig"), case_of("Hangs"), cases.BY_NAME["A3C"]]
    seen = []
    results = runner.run_suite(chosen, TINY, timeout_s=3, on_result=seen.append)
    assert seen == results
    broken, too_big, hangs, a3c = results
    assert (broken["error"], broken["message"]) == ("error", "ValueError: bad shape (1, 2)")
    assert too_big["error"] == "oom"
    assert too_big["message"] == "CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.77 GiB total capacity)"
    assert hangs["error"] == "timeout" and 3 <= hangs["seconds"] < 10
    assert "throughput" not in hangs
    _ok(a3c)


def test_a_pair_whose_partner_does_not_fit_is_out_of_memory(broken_families):
    result = runner.run_case(case_of("LM", partner="TooBig (batch size 1)"), TINY, timeout_s=60)
    assert result["error"] == "oom"


def test_a_case_whose_process_dies_is_an_error_and_a_stop_request_kills_the_case(monkeypatch, broken_families):
    monkeypatch.setitem(models._BUILDERS, "Dies", lambda *args: os._exit(3))
    died = runner.run_case(case_of("Dies"), TINY, timeout_s=60)
    assert (died["error"], died["message"]) == ("error", "the case's process exited with status 3")
    asked = iter([False, True])
    with pytest.raises(runner.Stopped, match="Hangs case"):
        runner.run_case(case_of("Hangs"), TINY, timeout_s=60, should_stop=lambda: next(asked))
