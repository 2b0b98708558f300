"""The structural algorithms of :mod:`mbmodel.graph` against networkx's on random systems."""

import networkx as nx
import numpy as np
import pytest

from mbmodel import graph


def random_square_system(n, rng, density=3.0):
    """Incidence lists of ``n`` equations in ``n`` unknowns with a perfect matching
    (equation ``perm[v]`` reads ``v``) plus random other entries."""
    perm = rng.permutation(n)
    incidence = [set() for _ in range(n)]
    for v in range(n):
        incidence[perm[v]].add(v)
    for _ in range(int(density * n)):
        incidence[rng.integers(n)].add(int(rng.integers(n)))
    return [sorted(vs) for vs in incidence]


def reference_blt(incidence, eq_match):
    """Strongly connected components of "equation solving v -> equations reading v" in
    topological order, the one with the smallest equation first among those ready."""
    solver = {v: e for e, v in enumerate(eq_match)}
    g = nx.DiGraph()
    g.add_nodes_from(range(len(incidence)))
    g.add_edges_from((solver[v], e) for e, vs in enumerate(incidence) for v in vs
                     if solver[v] != e)
    dag = nx.condensation(g)
    first = {c: min(dag.nodes[c]["members"]) for c in dag}
    order = nx.lexicographical_topological_sort(dag, key=first.get)
    return [sorted(dag.nodes[c]["members"]) for c in order]


@pytest.mark.parametrize("seed", range(6))
def test_blt_is_networkx_condensation_in_smallest_first_topological_order(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 400))
    incidence = random_square_system(n, rng, density=rng.uniform(0.5, 2.5))
    eq_match, _ = graph.maximum_matching(incidence, n)
    assert graph.UNMATCHED not in eq_match
    assert graph.blt(incidence, eq_match, n) == reference_blt(incidence, eq_match)


@pytest.mark.parametrize("seed", range(6))
def test_maximum_matching_has_networkx_cardinality(seed):
    rng = np.random.default_rng(100 + seed)
    n_eqs, n_vars = int(rng.integers(5, 300)), int(rng.integers(5, 300))
    incidence = [sorted({int(v) for v in rng.integers(n_vars, size=rng.integers(0, 4))})
                 for _ in range(n_eqs)]
    allowed = [bool(a) for a in rng.random(n_vars) < 0.8]
    eq_match, var_match = graph.maximum_matching(incidence, n_vars, allowed)
    pairs = [(e, v) for e, v in enumerate(eq_match) if v != graph.UNMATCHED]
    assert all(v in incidence[e] and allowed[v] and var_match[v] == e for e, v in pairs)
    assert len({v for _, v in pairs}) == len(pairs)
    bipartite = nx.Graph()
    eqs = [("e", e) for e in range(n_eqs)]
    bipartite.add_nodes_from(eqs)
    bipartite.add_nodes_from(("v", v) for v in range(n_vars))
    bipartite.add_edges_from((("e", e), ("v", v)) for e, vs in enumerate(incidence)
                             for v in vs if allowed[v])
    reference = nx.bipartite.hopcroft_karp_matching(bipartite, top_nodes=eqs)
    assert len(pairs) == len(reference) // 2
    # Extended from a matching of the first half of the equations: still maximum, and every
    # variable matched at the start stays matched (maybe to another equation).
    half = n_eqs // 2
    first = graph.maximum_matching(incidence[:half], n_vars, allowed)
    extended, extended_vars = graph.maximum_matching(
        incidence, n_vars, allowed, start=(first[0] + [graph.UNMATCHED] * (n_eqs - half),
                                           first[1]))
    assert sum(v != graph.UNMATCHED for v in extended) == len(reference) // 2
    assert all(extended_vars[v] != graph.UNMATCHED
               for v, e in enumerate(first[1]) if e != graph.UNMATCHED)
    assert all(v in incidence[e] and extended_vars[v] == e
               for e, v in enumerate(extended) if v != graph.UNMATCHED)
