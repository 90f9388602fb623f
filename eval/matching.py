"""Matching predicted mentions to gold mentions within one note.

Two strategies, both one-to-one:

- strict: identical span sets (the same characters, fragment for fragment);
- relaxed: a maximum bipartite matching between gold and predicted mentions
  that share at least one character (SciPy's Hopcroft–Karp).

CUI agreement is judged only among strict pairs: when one span set occurs
several times, equal CUIs are paired first.
"""

from __future__ import annotations

from collections import Counter
from typing import Sequence

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_bipartite_matching

from share_ner.document import Mention


def strict_matches(gold: Sequence[Mention], pred: Sequence[Mention]) -> int:
    """Size of the one-to-one matching of mentions with identical span sets."""
    g = Counter(m.spans for m in gold)
    p = Counter(m.spans for m in pred)
    return sum(min(n, p[spans]) for spans, n in g.items())


def cui_matches(gold: Sequence[Mention], pred: Sequence[Mention]) -> int:
    """Strict pairs whose CUIs agree, pairing equal CUIs first within each repeated span set.

    With ``a`` gold and ``b`` predicted mentions on one span set, at most
    ``min(a, b)`` pairs exist; matching equal CUIs first gives
    ``sum over CUIs of min(gold count, pred count)`` correct ones, never more than ``min(a, b)``.
    """
    g = Counter((m.spans, m.cui) for m in gold)
    p = Counter((m.spans, m.cui) for m in pred)
    return sum(min(n, p[key]) for key, n in g.items())


def overlap_matrix(gold: Sequence[Mention], pred: Sequence[Mention]) -> csr_matrix:
    """Sparse gold x pred matrix, nonzero where the two mentions share at least one character."""
    gi = [i for i, m in enumerate(gold) for _ in m.spans]
    pi = [j for j, m in enumerate(pred) for _ in m.spans]
    if not gi or not pi:
        return csr_matrix((len(gold), len(pred)), dtype=np.int8)
    gs = np.array([sp for m in gold for sp in m.spans])
    ps = np.array([sp for m in pred for sp in m.spans])
    # half-open spans [s1, e1) and [s2, e2) share a character iff s1 < e2 and s2 < e1
    hit = (gs[:, None, 0] < ps[None, :, 1]) & (ps[None, :, 0] < gs[:, None, 1])
    rows, cols = np.nonzero(hit)
    data = np.ones(len(rows), dtype=np.int8)
    m = csr_matrix((data, (np.array(gi)[rows], np.array(pi)[cols])), shape=(len(gold), len(pred)))
    m.sum_duplicates()
    m.data[:] = 1
    return m


def relaxed_pairs(gold: Sequence[Mention], pred: Sequence[Mention]) -> list[tuple[int, int]]:
    """A maximum one-to-one matching of overlapping mentions, as (gold index, pred index) pairs."""
    if not gold or not pred:
        return []
    graph = overlap_matrix(gold, pred)
    if graph.nnz == 0:
        return []
    # perm_type="column": for each gold row, the matched pred column or -1
    match = maximum_bipartite_matching(graph, perm_type="column")
    return [(i, int(j)) for i, j in enumerate(match) if j >= 0]


def relaxed_matches(gold: Sequence[Mention], pred: Sequence[Mention]) -> int:
    """Size of a maximum one-to-one matching between overlapping gold and predicted mentions."""
    return len(relaxed_pairs(gold, pred))


def strict_pairs(gold: Sequence[Mention], pred: Sequence[Mention]) -> list[tuple[int, int]]:
    """The strict matching as (gold index, pred index) pairs, equal CUIs paired first within each span set.

    Its length is :func:`strict_matches`; the pairs whose CUIs agree number :func:`cui_matches`.
    """
    free: dict[tuple, list[int]] = {}
    for j, m in enumerate(pred):
        free.setdefault(m.spans, []).append(j)
    pairs: list[tuple[int, int]] = []
    waiting: list[int] = []
    for i, g in enumerate(gold):
        js = free.get(g.spans)
        if not js:
            continue
        same = next((j for j in js if pred[j].cui == g.cui), None)
        if same is None:
            waiting.append(i)  # paired after every equal-CUI pair of its span set is taken
        else:
            js.remove(same)
            pairs.append((i, same))
    for i in waiting:
        js = free.get(gold[i].spans)
        if js:
            pairs.append((i, js.pop(0)))
    return sorted(pairs)
