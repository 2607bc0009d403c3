from catalog.predictors.bench import P2_COUNTS, BenchSettings, format_table, run_benchmark


def test_quick_benchmark_reports_every_key(catalog):
    small = catalog.without(catalog.workloads[6:])
    settings = BenchSettings(quick=True, architectures=("feedforward", "structured"))
    report = run_benchmark(small, settings, log=lambda _: None)
    for split in ("leave_one_workload_out", "leave_one_family_out"):
        for row in ("feedforward", "structured", "ensemble", "low_rank", "nearest_neighbour"):
            scores = report["p1"][split][row]
            assert set(scores) == {"train_mae", "val_mae", "iso_mape"}
            assert set(scores["iso_mape"]) == {"zero_shot", "one_shot"}
    assert set(report["p2"]["curve"]["feedforward"]) == {str(c) for c in P2_COUNTS}
    assert set(report["latency_ms"]) == {"p1", "p2_update"}
    assert set(report["latency_ms"]["p1"]) == {"feedforward", "structured"}
    assert "feedforward" in format_table(report)
