"""One trial of a configuration and the runs of many: the engine under ``tune``.

    context.py       TrialContext: everything a trial needs besides its configuration
    launcher.py      Launcher: start(config) → a running server (vLLM process, Docker); testing.py: the fake
    measuring.py     the capacity search against a running server, and the hopeless rule
    runner.py        run_trial: budget → launch → measure → stop, every outcome a TrialResult state
    device_rules.py  per device: one startup at a time, one measurement at a time, the time budget, Ctrl-C
    scheduler.py     Scheduler: jobs on a thread pool, one per device slot, the baseline alone
    placement.py     GpuPool and GroupStartLocks: the GPU group each trial's layout needs
    time_budget.py   ``--time-budget``: one clock for the run, asked before a trial and before a measurement
    capacity.py      capacity_search (pure): the highest rate at which every SLO holds; level.py: one level
    result.py        TrialResult, TrialState: the frozen record of one trial

Nothing is imported here: each module is imported where it is used.
"""
