"""Structural algorithms on integer incidence structures (no expressions here).

Equations and variables are integers. ``incidence[e]`` lists the variables of equation ``e``.
``var_diff[v]`` is the variable holding the time derivative of ``v`` (or ``None``);
``eq_diff[e]`` likewise for equations. Everything is deterministic: ties are broken by index.

Passes:
- :func:`maximum_matching` — greedy start plus augmenting paths (iterative DFS).
- :func:`pantelides` — index reduction: which equations to differentiate.
- :func:`dummy_derivatives` — Mattsson–Söderlind state selection.
- :func:`blt` — block lower-triangular order (Tarjan SCCs of the matched graph).
- :func:`tear` — tearing of one block given which (equation, variable) pairs are solvable.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass, field
from itertools import chain

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

UNMATCHED = -1


def _augment(start_eq, incidence, allowed, var_match, eq_match, visited_vars,
             visited_eqs=None):
    """One augmenting-path search from ``start_eq`` (iterative DFS). Returns True on success
    and flips the path. ``allowed[v]``: whether variable ``v`` may be matched (a list: a
    call per edge would cost more than the search). ``visited_vars`` (set) is shared by the
    caller across one phase."""
    if visited_eqs is not None:
        visited_eqs.append(start_eq)
    # Cheap assignment first: a free variable directly in the equation.
    for v in incidence[start_eq]:
        if allowed[v] and var_match[v] == UNMATCHED:
            var_match[v] = start_eq
            eq_match[start_eq] = v
            return True
    stack = [(start_eq, iter(incidence[start_eq]))]
    path = []  # (eq, var) pairs taken
    while stack:
        eq, it = stack[-1]
        advanced = False
        for v in it:
            if not allowed[v] or v in visited_vars:
                continue
            visited_vars.add(v)
            nxt = var_match[v]
            if nxt == UNMATCHED:
                path.append((eq, v))
                for e2, v2 in path:
                    var_match[v2] = e2
                    eq_match[e2] = v2
                return True
            path.append((eq, v))
            if visited_eqs is not None:
                visited_eqs.append(nxt)
            # Cheap assignment from the next equation.
            for w in incidence[nxt]:
                if allowed[w] and var_match[w] == UNMATCHED and w not in visited_vars:
                    visited_vars.add(w)
                    path.append((nxt, w))
                    for e2, v2 in path:
                        var_match[v2] = e2
                        eq_match[e2] = v2
                    return True
            stack.append((nxt, iter(incidence[nxt])))
            advanced = True
            break
        if not advanced:
            stack.pop()
            if path:
                path.pop()
    return False


def maximum_matching(incidence, n_vars, allowed=None, start=None):
    """Maximum matching of equations to variables, trying each equation's variables in
    incidence order; ``allowed[v]`` (a list, all if None) says which variables may be
    matched. ``start``: a matching ``(eq_match, var_match)`` to extend (every variable it
    matches stays matched: augmenting paths only add variables). Returns ``(eq_match,
    var_match)`` lists with ``UNMATCHED`` for unmatched entries.
    """
    inc = incidence
    if allowed is None:
        allowed = [True] * n_vars
    n_eqs = len(inc)
    if start is None:
        var_match = [UNMATCHED] * n_vars
        eq_match = [UNMATCHED] * n_eqs
    else:
        eq_match, var_match = list(start[0]), list(start[1])
    # Greedy start that gives each equation its free variable used by the fewest equations
    # (a variable only one equation can take should go to it): far fewer augmenting
    # searches on the long coupled chains of multibody models.
    degree = [0] * n_vars
    for vs in inc:
        for v in vs:
            degree[v] += 1
    for e in range(n_eqs):
        if eq_match[e] != UNMATCHED:
            continue
        best = UNMATCHED
        for v in inc[e]:
            if var_match[v] == UNMATCHED and allowed[v] and \
                    (best == UNMATCHED or degree[v] < degree[best]):
                best = v
        if best != UNMATCHED:
            var_match[best] = e
            eq_match[e] = best
    # Phases share one visited set (Pothen–Fan): each phase is linear in the graph size. A
    # search that fails within a phase may have been blocked by a stale visit, so phases
    # repeat until one augments nothing; in that phase the matching never changed, so the
    # shared visits were exact and the matching is maximum.
    pending = [e for e in range(n_eqs) if eq_match[e] == UNMATCHED]
    while pending:
        visited: set[int] = set()
        still = [e for e in pending
                 if not _augment(e, inc, allowed, var_match, eq_match, visited)]
        if len(still) == len(pending):
            break
        pending = still
    return eq_match, var_match


@dataclass
class IndexReduction:
    """Result of :func:`pantelides`: the extended system (new variables and equations are
    appended; ``new_vars``/``new_eqs`` say which)."""

    incidence: list[list[int]]
    var_diff: list[int | None]
    eq_diff: list[int | None]
    var_integral: list[int | None]  # inverse of var_diff
    eq_integral: list[int | None]   # inverse of eq_diff
    new_vars: list[int] = field(default_factory=list)
    new_eqs: list[int] = field(default_factory=list)
    eq_match: list[int] = field(default_factory=list)


class StructurallySingular(Exception):
    """Raised by the graph passes; the caller turns it into a user-facing error."""

    def __init__(self, equations, variables):
        super().__init__("structurally singular")
        self.equations = equations
        self.variables = variables


def families(var_integral) -> list[int]:
    """For each variable, the variable its derivatives go back to (``var_integral[v]`` is the
    variable ``v`` is the derivative of, or None): a family shares one entry."""
    family = list(range(len(var_integral)))
    for v in range(len(var_integral)):
        u = v
        while var_integral[u] is not None:
            u = var_integral[u]
        family[v] = u
    return family


def check_regular(incidence, n_vars, var_diff, var_integral):
    """Every equation must be matchable to a distinct variable *family* (a variable together
    with its derivatives); otherwise the system is structurally singular whatever the index.
    Returns None or raises :class:`StructurallySingular` naming the over-determined part."""
    family = families(var_integral)
    fam_inc = []
    for vs in incidence:
        fam_inc.append(list(dict.fromkeys(family[v] for v in vs)))
    eq_match, var_match = maximum_matching(fam_inc, n_vars)
    unmatched = [e for e, v in enumerate(eq_match) if v == UNMATCHED]
    if not unmatched:
        return
    # Over-determined part (Dulmage–Mendelsohn): equations reachable from unmatched equations
    # by alternating paths, and their variables.
    eqs, vars_ = set(unmatched), set()
    frontier = list(unmatched)
    while frontier:
        e = frontier.pop()
        for f in fam_inc[e]:
            if f not in vars_:
                vars_.add(f)
                m = var_match[f]
                if m != UNMATCHED and m not in eqs:
                    eqs.add(m)
                    frontier.append(m)
    raise StructurallySingular(sorted(eqs), sorted(vars_))


def pantelides(incidence, n_vars, var_diff, max_steps=None):
    """Pantelides' algorithm. ``incidence`` and ``var_diff`` describe the DAE (derivatives are
    separate variables). Returns an :class:`IndexReduction` whose matching assigns each
    equation to a highest-derivative variable."""
    incidence = [list(vs) for vs in incidence]
    var_diff = list(var_diff) + [None] * (n_vars - len(var_diff))
    var_integral: list[int | None] = [None] * n_vars
    for v, d in enumerate(var_diff):
        if d is not None:
            var_integral[d] = v
    n_orig = len(incidence)
    eq_diff: list[int | None] = [None] * n_orig
    eq_integral: list[int | None] = [None] * n_orig
    result = IndexReduction(incidence, var_diff, eq_diff, var_integral, eq_integral)

    highest = [d is None for d in var_diff]  # kept up to date as derivatives are added

    # Start from a maximum matching on the highest derivatives (linear phases): the
    # equations it matches are those whose augmenting search would succeed anyway, so only
    # the rest need Pantelides' search-and-differentiate loop. One search per equation from
    # a naive start is quadratic on long chains.
    eq_match, var_match = maximum_matching(incidence, n_vars, highest)
    if UNMATCHED in eq_match:
        # Every family has one highest derivative, so when that matching leaves no equation
        # out, the families match too: the regularity check has nothing to find.
        check_regular(incidence, n_vars, var_diff, var_integral)
    steps = 0
    limit = max_steps if max_steps is not None else 4 * (n_orig + n_vars) + 10
    for k in range(n_orig):
        if eq_match[k] != UNMATCHED:
            continue
        i = k
        while True:
            visited_vars: set[int] = set()
            visited_eqs: list[int] = []
            if _augment(i, incidence, highest, var_match, eq_match, visited_vars, visited_eqs):
                break
            steps += 1
            if steps > limit:
                raise StructurallySingular(sorted(set(visited_eqs)), sorted(visited_vars))
            colored_vars = sorted(visited_vars)
            colored_eqs = sorted(set(visited_eqs))

            def new_derivative(v):
                d = len(var_diff)
                var_diff.append(None)
                highest.append(True)
                var_integral.append(v)
                var_match.append(UNMATCHED)
                var_diff[v] = d
                highest[v] = False
                result.new_vars.append(d)
                return d

            for v in colored_vars:
                new_derivative(v)
            # New derivative equations for colored equations.
            for e in colored_eqs:
                d = len(incidence)
                inc = []
                for v in incidence[e]:
                    inc.append(v)
                    dv = var_diff[v]
                    if dv is None:  # an algebraic variable of the equation: give it a derivative
                        dv = new_derivative(v)
                    inc.append(dv)
                incidence.append(inc)
                eq_diff.append(None)
                eq_integral.append(e)
                eq_match.append(UNMATCHED)
                eq_diff[e] = d
                result.new_eqs.append(d)
            for v in colored_vars:
                e = var_match[v]
                dv, de = var_diff[v], eq_diff[e]
                var_match[dv] = de
                eq_match[de] = dv
            i = eq_diff[i]
    result.eq_match = eq_match
    return result


def dummy_derivatives(red: IndexReduction, preference, jacobian=None):
    """Mattsson–Söderlind dummy derivatives.

    ``preference[v]`` orders candidates: variables with *lower* preference are chosen as
    dummies first (so high preference keeps a variable a state). ``jacobian(eqs, vars)``, if
    given, returns the equations' Jacobian with respect to the variables at a generic point
    (a scipy sparse matrix). The structural choice (the first candidates a matching can
    place: a transversal matroid) is checked with it; where it is numerically singular (two
    derivatives that two constraints fix only in their sum) the dummies are the first
    candidates whose columns are linearly independent (the linear matroid). Returns the set
    of dummy derivative variables.
    """
    incidence, var_diff, eq_diff = red.incidence, red.var_diff, red.eq_diff
    var_integral, eq_integral = red.var_integral, red.eq_integral
    dummies: set[int] = set()
    eqs_of: dict[int, list[int]] = {}
    for e, vs in enumerate(incidence):
        for v in vs:
            eqs_of.setdefault(v, []).append(e)

    def red_eqs_of(v):
        return eqs_of.get(v, [])

    current_eqs = [e for e in range(len(incidence)) if eq_diff[e] is None]
    current_vars = None  # None: all highest-derivative variables
    while True:
        H = [e for e in current_eqs if eq_integral[e] is not None]
        if not H:
            break
        if current_vars is None:
            cands = {v for e in H for v in incidence[e]
                     if var_diff[v] is None and var_integral[v] is not None}
        else:
            cands = {v for v in current_vars if var_integral[v] is not None}
        # Choosing the dummies is finding a minimum-weight basis of a transversal matroid:
        # try candidates in order of increasing preference and keep each one an augmenting
        # path can still place (greedy is optimal on matroids).
        order = sorted(cands, key=lambda v: (preference[v], v))
        h_index = {e: i for i, e in enumerate(H)}
        cand_inc = [[h_index[e] for e in red_eqs_of(v) if e in h_index] for v in order]
        eq_of_cand = [UNMATCHED] * len(order)
        cand_of_eq = [UNMATCHED] * len(H)
        every = [True] * len(H)
        for c in range(len(order)):
            _augment(c, cand_inc, every, cand_of_eq, eq_of_cand, set())
        if any(m == UNMATCHED for m in cand_of_eq):
            bad = [H[i] for i, m in enumerate(cand_of_eq) if m == UNMATCHED]
            raise StructurallySingular(bad, sorted(cands))
        eq_m = cand_of_eq
        chosen = [order[m] for m in eq_m]
        if jacobian is not None and not _regular(jacobian(H, chosen)):
            chosen = _independent_columns(jacobian, H, order) or chosen
        dummies.update(chosen)
        current_eqs = [eq_integral[e] for e in H]
        current_vars = [var_integral[v] for v in chosen]
    return dummies


def _regular(J) -> bool:
    """Whether the square sparse matrix ``J`` is numerically nonsingular (sparse LU)."""
    import scipy.sparse.linalg
    J = J.tocsc()
    if not np.all(np.isfinite(J.data)):
        return False
    try:
        lu = scipy.sparse.linalg.splu(J)
    except RuntimeError:  # "Factor is exactly singular"
        return False
    pivots = np.abs(lu.U.diagonal())
    return bool(pivots.size == 0 or pivots.min() > 1e-12 * max(1.0, np.abs(J.data).max()))


def _independent_columns(jacobian, rows, order):
    """The first columns of ``jacobian(rows, order)``, in order, that are linearly
    independent, as many as there are rows; ``None`` if the matrix is not finite or not of
    full row rank (the structural choice then applies)."""
    J = jacobian(rows, order).toarray()
    if J.shape != (len(rows), len(order)) or not np.all(np.isfinite(J)):
        return None
    scale = max(1.0, float(np.abs(J).max())) if J.size else 1.0
    basis = np.zeros((len(rows), 0))
    chosen = []
    for k, v in enumerate(order):
        col = J[:, k]
        residual = col - basis @ (basis.T @ col) if basis.shape[1] else col
        norm = np.linalg.norm(residual)
        if norm > 1e-9 * scale:
            basis = np.column_stack([basis, residual / norm])
            chosen.append(v)
            if len(chosen) == len(rows):
                return chosen
    return None


def blt(incidence, eq_match, n_vars):
    """Block lower-triangular ordering. ``eq_match[e]`` is the variable equation ``e`` solves.
    Returns a list of blocks, each a list of equations, in evaluation order: the strongly
    connected components of the graph "equation solving v -> equations reading v", in
    topological order, the component with the smallest equation first among those ready
    (scipy finds the components; the graph has an edge per incidence entry, too many for
    networkx objects on a large model)."""
    n_eqs = len(incidence)
    if n_eqs == 0:
        return []
    var_to_eq = np.full(max(n_vars, 1), UNMATCHED, dtype=np.int64)
    matched = np.asarray(eq_match, dtype=np.int64)
    var_to_eq[matched[matched != UNMATCHED]] = np.flatnonzero(matched != UNMATCHED)
    counts = np.fromiter(map(len, incidence), dtype=np.int64, count=n_eqs)
    readers = np.repeat(np.arange(n_eqs), counts)
    read = np.fromiter(chain.from_iterable(incidence), dtype=np.int64, count=int(counts.sum()))
    sources = var_to_eq[read]
    keep = (read != matched[readers]) & (sources != UNMATCHED)
    sources, readers = sources[keep], readers[keep]
    graph = csr_matrix((np.ones(len(sources), dtype=np.int8), (sources, readers)),
                       shape=(n_eqs, n_eqs))
    n_blocks, label = connected_components(graph, directed=True, connection="strong")
    first = np.full(n_blocks, n_eqs, dtype=np.int64)
    np.minimum.at(first, label, np.arange(n_eqs))
    # Renumber blocks by their smallest equation: ties in the topological order go to it.
    rank = np.empty(n_blocks, dtype=np.int64)
    rank[np.argsort(first)] = np.arange(n_blocks)
    block = rank[label]
    between = block[sources] != block[readers]
    # edges between blocks, sorted by (source, reader), each once (one integer key apiece:
    # a unique over pairs would sort structured rows; numpy's unique hashes integers, ~15
    # times slower than sorting them)
    keys = np.sort(block[sources][between] * n_blocks + block[readers][between])
    keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))] if keys.size else keys
    edge_source, edge_reader = np.divmod(keys, n_blocks)
    first_edge = np.searchsorted(edge_source, np.arange(n_blocks + 1)).tolist()
    edge_reader_list = edge_reader.tolist()
    indegree = np.bincount(edge_reader, minlength=n_blocks).tolist()
    ready = [b for b in range(n_blocks) if indegree[b] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        b = heapq.heappop(ready)
        order.append(b)
        for c in edge_reader_list[first_edge[b]:first_edge[b + 1]]:
            indegree[c] -= 1
            if indegree[c] == 0:
                heapq.heappush(ready, c)
    by_block = np.argsort(block, kind="stable")
    first_member = np.searchsorted(block[by_block], np.arange(n_blocks + 1)).tolist()
    by_block = by_block.tolist()
    return [by_block[first_member[b]:first_member[b + 1]] for b in order]


@dataclass
class Tearing:
    """How to solve one block: ``assignments`` (eq, var) in order, each solved explicitly for
    its variable once the tearing variables are known; ``residuals`` close the block."""

    tear_vars: list[int]
    residuals: list[int]
    assignments: list[tuple[int, int]]


def tear(block_eqs, block_vars, incidence, solvable, preferred=frozenset(),
         started=frozenset()):
    """Greedy tearing (Cellier's heuristics, simplified): repeatedly solve an equation with a
    single unknown left for which it is ``solvable(eq, var)``; when none exists, tear the
    variable that occurs in most remaining equations, taking the ``preferred`` ones (e.g.
    constraint forces of kinematic loops) first and, of those occurring as often, one with a
    known start value (``started``: Newton's start). Deterministic."""
    bvars = set(block_vars)
    remaining = {e: [v for v in incidence[e] if v in bvars] for e in block_eqs}
    unknown_count = {e: len(set(vs)) for e, vs in remaining.items()}
    occurs: dict[int, list[int]] = {v: [] for v in block_vars}
    for e in block_eqs:
        for v in dict.fromkeys(remaining[e]):
            occurs[v].append(e)
    known: set[int] = set()
    done_eqs: set[int] = set()
    tear_vars, assignments = [], []
    queue = deque(e for e in block_eqs if unknown_count[e] == 1)

    def mark_known(v):
        known.add(v)
        for e in occurs[v]:
            unknown_count[e] -= 1
            if unknown_count[e] == 1 and e not in done_eqs:
                queue.append(e)

    while len(known) < len(block_vars):
        while queue:
            e = queue.popleft()
            if e in done_eqs or unknown_count[e] != 1:
                continue
            v = next(v for v in remaining[e] if v not in known)
            if solvable(e, v):
                assignments.append((e, v))
                done_eqs.add(e)
                mark_known(v)
        if len(known) == len(block_vars):
            break
        # Tear: the unknown variable in most open equations (ties: lowest index).
        def open_count(v):
            return sum(1 for e in occurs[v] if e not in done_eqs)
        candidates = [v for v in block_vars if v not in known]
        top = max((v in preferred, open_count(v)) for v in candidates)
        best = max((v for v in candidates if (v in preferred) == top[0]
                    and open_count(v) == top[1]), key=lambda v: (v in started, -v))
        tear_vars.append(best)
        mark_known(best)
    residuals = [e for e in block_eqs if e not in done_eqs]
    return Tearing(tear_vars, residuals, assignments)
