// Package mathans decides whether a model's final answer to a competition
// math problem (MATH, MATH-500) equals the gold answer.
//
// It works in three steps, each usable alone:
//
//   - Extract finds the final answer in a response: the last \boxed{…} or
//     \fbox{…} (nested braces), else the last final-answer line ("Answer:
//     …", "The final answer is … I hope it is correct.", "the answer is …"),
//     else the last math segment ($…$, $$…$$, \(…\), \[…\]).
//   - Normalize rewrites an answer the way the Hendrycks MATH is_equiv,
//     the PRM800K grader and lm-eval's minerva_math do (\dfrac, \left,
//     \!, spaces, ^\circ, \%, \$, units, \text{…}, \frac12, \sqrt2,
//     thousands separators, a leading "x =" or "(p,q) =", plain-text
//     sqrt(…), pi and Python's **), so equal strings mean equal answers.
//   - Equivalent compares two answers: equal normalised strings, else both
//     are parsed (numbers, \frac, \sqrt, powers, \pi, i, functions,
//     implicit multiplication, variables) and compared by value: exact
//     rationals exactly, other numbers within a relative 1e-8, expressions
//     with variables at seeded sample points; intervals by endpoints and
//     bracket kinds, tuples in order, sets and bare comma lists in any
//     order, matrices element-wise, equations up to a constant factor,
//     inequalities up to a positive factor (3 < x is x > 3, -x > -1 is
//     x < 1), a one-unknown inequality or chain as its interval (x > 3 is
//     (3, \infty), -2 \le x \le 7 is [-2, 7]).
//
// AGREEMENT.md gives, per peer grader (Math-Verify, NeMo-Skills, Minerva),
// how often these verdicts agree with its published test cases and where
// and why they differ; peers_test.go measures it and keeps the document
// true.
//
// Decisions where graders differ (each is tested in table_test.go):
//
//   - A percent sign is dropped, as Hendrycks, minerva and NeMo's
//     _normalize_math do: "50\%" equals "50", not "0.5".
//   - A degree sign and unit words are dropped: "30^\circ" equals "30".
//   - A bare comma list ("1, -2", the "enter all solutions" form) is
//     unordered; a parenthesised one is an ordered tuple; "(1,2)" and
//     "[1,2]" differ (bracket kinds of intervals are significant).
//   - "x = 3" equals "3" when the left side is one variable; an equation
//     equals another when their differences are proportional. A chain
//     "x = 5+6 = 11" is its last value, "x = 1/3 \approx 0.33" the exact
//     value before \approx.
//   - A comma is a thousands separator only between digit groups with no
//     space ("32,349", "32,\!349" are 32349); "32, 349" is two answers, as
//     Math-Verify reads it (Minerva deletes the space first). A semicolon
//     separates answers; braces alone ({1,3}) only group.
//   - Several \boxed{} in one response: the last is the answer (NeMo-Skills,
//     Minerva); Math-Verify joins them into a set.
//   - "a \pm b" is the list "a+b, a-b".
//   - A decimal answer is compared within a relative 1e-8, tighter than
//     math-verify's six decimals, so "3.14159" is not "\pi" (PRM800K's
//     sympy check is exact); integers and fractions with no decimal point
//     are compared exactly, so "1000000" and "1000001" differ.
//   - An integer directly followed by a numeric \frac is a mixed number:
//     "1\frac{4}{5}" is 9/5 (as MATH writes it), not 4/5.
//   - "i" is the imaginary unit; "e" and other letters are variables.
//   - A column or row vector equals the tuple of its entries.
//   - Words (three letters or more in a row) are text: compared as
//     normalised strings, case-insensitively, never as products.
//
// Nothing here panics on malformed input: parsing fails, and the answers
// are then equal only as strings.
package mathans
