#!/bin/bash
# Writes reward.json: the reward, and whether the file still parses.
mkdir -p /logs/verifier
python3 - <<'PY'
import json
out = {"reward": 0.0, "valid_json": 0.0}
try:
    with open("/app/config.json") as f:
        c = json.load(f)
    out["valid_json"] = 1.0
    want = {"name": "demo", "port": 8080, "debug": False, "workers": 4}
    if c == want:
        out["reward"] = 1.0
except Exception:
    pass
with open("/logs/verifier/reward.json", "w") as f:
    json.dump(out, f)
PY
