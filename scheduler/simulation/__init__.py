"""The closed-loop evaluation (`manage.py simulate`): a virtual-time cluster simulator, its
truth model and the policies it compares. Pure Python, no Django: the command is a thin shell.

    scenario = default_scenario(truth, jobs=..., seed=...)   # or trace_scenario(...)
    report = run_all(scenario, truth, catalog, policies=POLICIES)

See docs/simulation.md for the scenario, the truth model, the policies and the metrics.
"""
