# NeMo Evaluator's prompt construction for gpqa and drop (benchmarks/gpqa.py,
# benchmarks/drop.py), used by
# TestHubFixturesAgainstPython. argv: gpqa FILE | drop VALIDATION TRAIN.
# Prints a JSON list of [prompt, expected].
import hashlib, json, random, sys

def rows(p):
    return [json.loads(l) for l in open(p, encoding="utf-8") if l.strip()]

out = []
if sys.argv[1] == "gpqa":
    P = ("Answer the following multiple choice question. The last line of your response "
         "should be of the following format: 'Answer: $LETTER' (without quotes) where "
         "LETTER is one of ABCD.\n\n{Question}\n\nA) {A}\nB) {B}\nC) {C}\nD) {D}")
    for row in rows(sys.argv[2]):
        choices = [row["Correct Answer"], row["Incorrect Answer 1"],
                   row["Incorrect Answer 2"], row["Incorrect Answer 3"]]
        # nel's contract (not NeMo's shared Random(42)): each item is
        # shuffled by Random(seed), seed = the first 63 bits of
        # sha256("gpqa choices\0" + choice_seed + "\0" + content ID).
        content = {"question": row["Question"], "correct_answer": row["Correct Answer"],
                   "incorrect_answers": choices[1:], "domain": row.get("High-level domain") or ""}
        cid = hashlib.sha256(json.dumps(content, sort_keys=True, ensure_ascii=False,
                                        separators=(",", ":")).encode()).hexdigest()[:16]
        digest = hashlib.sha256(("gpqa choices\0%d\0%s" % (42, cid)).encode()).digest()
        perm = list(range(4))
        random.Random(int.from_bytes(digest[:8], "big") >> 1).shuffle(perm)
        shuffled = [choices[i] for i in perm]
        letter = "ABCD"[shuffled.index(row["Correct Answer"])]
        out.append([P.format(Question=row["Question"], A=shuffled[0], B=shuffled[1],
                             C=shuffled[2], D=shuffled[3]), letter])
else:
    H = ("You will be asked to read a passage and answer a question. "
         "Some examples of passages and Q&A are provided below.")
    F = ('\nThink step by step, then write a line of the form '
         '"Answer: $ANSWER" at the end of your response.\n')
    train = [{"context": r["passage"],
              "completion": r["answers_spans"]["spans"][0] if r["answers_spans"]["spans"] else ""}
             for r in rows(sys.argv[3])]
    for idx, row in enumerate(rows(sys.argv[2])):
        answers = list(row["answers_spans"]["spans"]) or [""]
        rng = random.Random(42 + idx)
        stuffing = rng.sample(train, min(3, len(train)))
        parts = [H, "\n\n# Examples"]
        for s in stuffing:
            parts.append(f"\n---\n{s['context']} {s['completion']}\n")
        parts.append("\n# Your Task\n")
        parts.append(f"\n---\n{row['passage']} {row['question']}")
        parts.append(F)
        out.append(["".join(parts), answers[0]])
json.dump(out, sys.stdout, ensure_ascii=False)
