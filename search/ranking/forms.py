"""A concept's forms, and its best form: one idea spelled several ways counts once, by its
best spelling."""

from __future__ import annotations

# One way a concept matches: (term, coefficient) pairs; it scores sum(coef x term score).
Form = list[tuple[str, float]]


def best_form(forms: list[Form], scores: dict[str, dict[int, float]]) -> dict[int, float]:
    """Per section (or page), the best form's score: a form is one term's score times its
    coefficient, or the coefficient-weighted sum of an identifier's parts (in part order)."""
    out: dict[int, float] = {}
    if len(forms[0]) == 1 and forms[0][0][1] == 1.0:
        out = dict(scores[forms[0][0][0]])
        forms = forms[1:]
    get = out.get
    for form in forms:
        if len(form) == 1:
            t, coef = form[0]
            for d, s in scores[t].items():
                if coef != 1.0:
                    s *= coef
                if s > get(d, 0.0):
                    out[d] = s
        else:
            mean: dict[int, float] = {}
            for t, coef in form:
                for d, s in scores[t].items():
                    mean[d] = mean.get(d, 0.0) + coef * s
            for d, s in mean.items():
                if s > get(d, 0.0):
                    out[d] = s
    return out
