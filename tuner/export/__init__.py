"""Deploy a finished study where users run vLLM, and state what its tokens cost.

    study.py       best.json (tuner.document's StudyDocument) → StudyWinner (the winner's config as measured, its rate)
    cost.py        $ per million output tokens at the stated rate (pure; also for best.json and the report)
    layout.py      how many GPUs a configuration occupies (tensor × pipeline × data parallel)
    flags.py       the tuned vLLM version's flags, to check the argv against (as launch.sh does)
    deployment.py  StudyWinner + flags → Deployment (image, argv, env, GPUs, header) shared by the formats
    machine_check.py  the wrapper that warns where the container's machine is not the one measured (launch.sh's checks)
    compose.py, kubernetes.py, kserve.py, helm.py   one renderer per format: Deployment → YAML text

``tune export`` and ``tune cost`` (tuner.commands) are thin layers over these.
"""
