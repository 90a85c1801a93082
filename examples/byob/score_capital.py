#!/usr/bin/env python3
"""A scorer command for nel's BYOB benchmarks (docs/byob.md).

nel-run starts it once per sample, writes one JSON object on its stdin,
{"response", "target", "prompt", "row"}, and reads one JSON object from its
stdout: {"correct": bool} or {"reward": float}, with "extracted" and any
other keys kept in the row's scoring details. A crash, a timeout or other
output is a scorer_error for that sample, never a wrong answer.

score() has the shape of a NeMo Evaluator @scorer function (it returns the
same dict); the last lines are the whole wrapper nel needs.
"""
import json
import sys


def score(response, target, row):
    # The first line of the answer, without a final period, ignoring case:
    # "Tokyo." and "tokyo" are right, "The capital is Tokyo." is not.
    lines = response.strip().splitlines()
    answer = lines[0].strip().rstrip(".") if lines else ""
    return {"correct": answer.lower() == str(target).lower(), "extracted": answer, "country": row.get("country")}


if __name__ == "__main__":
    sample = json.load(sys.stdin)
    json.dump(score(sample["response"], sample["target"], sample["row"]), sys.stdout)
