"""A study's output files: trials.csv, best.json, launch.sh and report.html, and what they show."""
