"""best.json read back: the study document as frozen records, for the readers of a finished study (retune, export).

    study.py    StudyDocument: the whole file (``from_json``: one-line errors naming the file and the key); CostFigures
    parts.py    the settings, GPU, model and vLLM tuned with; each trial as the file states it; the headline
    checks.py   certifications, --confirm's runs, predictions, the sample answer, speculation's verdict, the cost
    reader.py   Fields: typed reads of a parsed JSON object by key; DocumentError names where a value is wrong

Nothing is imported here: each module is imported where it is used.
"""
