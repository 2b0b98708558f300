"""Overdetermined connectors (e.g. orientations of multibody frames): roots, branches and
the spanning tree that decides where a connection equates all entries and where it closes a
loop and contributes only its residue equations.

Component ``Branch``es are required edges of the orientation graph, connections optional
ones; a spanning forest rooted at definite roots (or the best potential root) is taken with
networkx. Functions of the flattener ``fl`` (:mod:`mbmodel.flatten`).
"""

from __future__ import annotations

from collections import deque

import casadi as ca
import networkx as nx

from .core import (ROOTS, Branch, ClosesLoop, Connector, PotentialRoot, Root, _FlattenContext,
                   _iterate, _where)
from .errors import BalanceError, DeclarationError, KinematicLoopError

__all__ = ["collect_roles", "spanning_tree", "emit_tree_equations", "choose_roots_early", "overdetermined_variable"]


def collect_roles(fl):
    """Every component's ``connection_roles()``: definite roots, potential roots (with
    priority) and branches, as Overdetermined declarations."""
    roots, potential, branches = [], [], []
    var_of = {}
    for comp, conn, var in fl.overdetermined:
        var_of[var.symbol[0].element_hash()] = var
    # roles may depend on the analysis (Model.analysis answers from this context)
    previous = _FlattenContext.activate(_FlattenContext(
        fl.symbols, fl.make_derivative, analysis=fl.analysis, parameters=fl.parameter_mode))
    try:
        for comp in fl.components:
            _roles_of(fl, comp, var_of, roots, potential, branches)
    finally:
        _FlattenContext.activate(previous)
    return roots, potential, branches


def _roles_of(fl, comp, var_of, roots, potential, branches):
    """One component's roles, appended to the lists of :func:`collect_roles`."""
    for role in _iterate(comp.connection_roles(), comp, "connection_roles"):
        if isinstance(role, Root):
            roots.append(overdetermined_variable(fl, comp, role.symbol, var_of))
        elif isinstance(role, PotentialRoot):
            potential.append((overdetermined_variable(fl, comp, role.symbol, var_of),
                              role.priority))
        elif isinstance(role, Branch):
            branches.append((overdetermined_variable(fl, comp, role.a, var_of),
                             overdetermined_variable(fl, comp, role.b, var_of), comp))
            if role.one_way:
                fl.one_way_branches.append((*branches[-1], role.one_way))
        elif isinstance(role, ClosesLoop):
            fl.loop_closers.append((overdetermined_variable(fl, comp, role.a, var_of),
                                    overdetermined_variable(fl, comp, role.b, var_of),
                                    comp))
        else:
            raise DeclarationError(f"{_where(comp)}: connection_roles() yields Root, "
                                   f"PotentialRoot, Branch or ClosesLoop, not {role!r}")


def overdetermined_variable(fl, comp, symbol, var_of):
    """The Overdetermined declaration whose symbol is ``symbol`` (a clear error if none)."""
    var = var_of.get(ca.SX(symbol)[0].element_hash()) if isinstance(symbol, ca.SX) else None
    if var is None:
        raise DeclarationError(f"{_where(comp)}: connection roles take an Overdetermined "
                               f"connector variable (e.g. fl.frame_a.R)")
    return var


def spanning_tree(fl, roots, potential, branches, optional_edges):
    """Decide which overdetermined connections equate entries and which close a loop.

    Returns the chosen potential roots (ids), the decisions to emit after the connection
    equations (:func:`emit_tree_equations`) and the loop cuts: connections that close a loop
    between connectors whose type defines :meth:`~mbmodel.Connector.loop_closure`, as
    ``(node_a, node_b, owner, path)`` (``path``: see :class:`~mbmodel.LoopCut`)."""
    graph = nx.MultiGraph()
    for _, _, var in fl.overdetermined:
        graph.add_node(var)
    super_root = "<root>"
    graph.add_node(super_root)
    for a, b, comp in branches:
        graph.add_edge(a, b, weight=0, kind="branch", owner=comp)
    connections = []
    for a, b, comp, node_a, node_b in optional_edges:
        key = graph.add_edge(a, b, weight=1, kind="connection", owner=comp,
                             nodes=(node_a, node_b))
        connections.append((a, b, key))
    for r in roots:
        graph.add_edge(super_root, r, weight=-2, kind="root", owner=None)
    chosen = _choose_potential_roots(graph.subgraph([n for n in graph if n != super_root]),
                                     roots, potential)
    for var in chosen:
        graph.add_edge(super_root, var, weight=-1, kind="root", owner=None)
    for a, b, key in _along_branches(roots + chosen, branches, connections):
        graph.edges[a, b, key]["weight"] = 0.5
    tree_edges, adjacent = set(), {} if fl.one_way_branches else None
    for u, v, key, data in nx.minimum_spanning_edges(graph, algorithm="kruskal", keys=True,
                                                      data=True):
        tree_edges.add((id(data["owner"]), id(u), id(v), key))
        tree_edges.add((id(data["owner"]), id(v), id(u), key))
        if adjacent is not None:
            adjacent.setdefault(id(u), []).append(v)
            adjacent.setdefault(id(v), []).append(u)
    if adjacent is not None:
        _check_one_way(fl.one_way_branches, adjacent, super_root)
    decisions, cuts, cut_pairs = [], [], set()
    tree = None
    for u, v, key, data in graph.edges(keys=True, data=True):
        in_tree = (id(data["owner"]), id(u), id(v), key) in tree_edges
        # Root edges (weight < 0) always enter the tree first; a connection that joins
        # two rooted trees closes a loop and gives a residue like any other loop.
        if data["kind"] == "branch" and not in_tree:
            raise BalanceError(
                f"{_where(data['owner'])}: the rigid branch '{u.path}' -> '{v.path}' closes "
                f"a loop of rigid connections (or joins two roots); cut the loop with a "
                f"joint that has no branch, or remove a root")
        if data["kind"] != "connection":
            continue
        if in_tree:
            decisions.append((u, v, data["owner"], "equal"))
        elif _closes_loops(u.owner):
            pair = frozenset((id(u.owner), id(v.owner)))
            if pair in cut_pairs:
                continue  # another overdetermined variable of the same two connectors
            cut_pairs.add(pair)
            if tree is None:
                tree = _tree_graph(graph, tree_edges)
            path = _tree_path(tree, u, v)
            if path is None:
                raise KinematicLoopError(_loop_message(graph, tree_edges, u, v, data["owner"],
                                                       roots + chosen))
            cuts.append((*data["nodes"], data["owner"], path))
        elif u.residue is None:
            raise KinematicLoopError(_loop_message(graph, tree_edges, u, v, data["owner"],
                                                   roots + chosen))
        else:
            decisions.append((u, v, data["owner"], "residue"))
    for a, b, comp in fl.loop_closers:
        if tree is None:
            tree = _tree_graph(graph, tree_edges)
        path = _tree_path(tree, a, b)
        if path is not None:
            fl.mark_loop([c for _, c in path if c is not None and c is not ROOTS] + [comp],
                         [a.owner])
    return {id(var) for var in chosen}, decisions, cuts


def _check_one_way(one_way, adjacent, super_root):
    """Refuse a one-way branch (:class:`~mbmodel.core.Branch`) whose second end the tree
    reaches first from its root, with the branch's own explanation."""
    depth, queue = {id(super_root): 0}, deque([super_root])
    while queue:
        node = queue.popleft()
        for nxt in adjacent.get(id(node), ()):
            if id(nxt) not in depth:
                depth[id(nxt)] = depth[id(node)] + 1
                queue.append(nxt)
    for a, b, comp, text in one_way:
        if depth.get(id(b), -1) < depth.get(id(a), -1):
            raise DeclarationError(f"{_where(comp)}: {text}")


def _along_branches(roots, branches, connections):
    """The connections of a tree that enters every branch at its first end (``Branch(a, b)``
    from ``a`` to ``b``), found breadth-first from the roots: the tree to prefer, so that a
    loop is cut where following the branches closes it. (Components may write their
    equations for that direction: e.g. a joint's articulated-body step passes the subtree
    at its frame_b to its frame_a.) Nodes it cannot reach are left to the spanning tree."""
    second_ends = {id(b) for _, b, _ in branches}
    out: dict[int, list] = {}
    for a, b, _ in branches:
        out.setdefault(id(a), []).append((b, None))
    for a, b, key in connections:
        out.setdefault(id(a), []).append((b, (a, b, key)))
        out.setdefault(id(b), []).append((a, (a, b, key)))
    seen = {id(r) for r in roots}
    queue = deque(roots)
    used = []
    while queue:
        node = queue.popleft()
        for nxt, connection in out.get(id(node), ()):
            if id(nxt) in seen or (connection is not None and id(nxt) in second_ends):
                continue
            seen.add(id(nxt))
            queue.append(nxt)
            if connection is not None:
                used.append(connection)
    return used


def emit_tree_equations(fl, decisions):
    """Equal entries along the spanning tree, residues where a connection closes a loop of a
    connector type without :meth:`~mbmodel.Connector.loop_closure`."""
    for u, v, owner, kind in decisions:
        if kind == "equal":
            fl.emit(u.symbol - v.symbol, owner, f"{u.path} = {v.path}", "connection",
                    fl.difference_forms(u, v))
        else:
            fl.emit(u.residue(u.symbol, v.symbol), owner, f"loop residue {u.path} ~ {v.path}",
                    "residue")


def _closes_loops(connector) -> bool:
    return type(connector).loop_closure is not Connector.loop_closure


def _tree_graph(graph, tree_edges):
    """The spanning tree, each edge with the component of its branch (``None`` for a
    connection, :data:`~mbmodel.core.ROOTS` from a definite root to the super root)."""
    tree = nx.Graph()
    for a, b, key, data in graph.edges(keys=True, data=True):
        if (id(data["owner"]), id(a), id(b), key) not in tree_edges:
            continue
        if data["kind"] == "root":
            if data["weight"] == -2:  # definite roots are fixed in the world; chosen
                tree.add_edge(a, b, branch=ROOTS)  # potential roots start their own tree
        else:
            tree.add_edge(a, b, branch=data["owner"] if data["kind"] == "branch" else None)
    return tree


def _tree_path(tree, u, v):
    """Connectors from u's to v's along the tree, each with the branch component leading to
    the next (``None``: a connection, ``ROOTS``: from one definite root to another), or
    ``None`` if there is no such path."""
    if u not in tree or v not in tree:
        return None
    try:
        nodes = [n for n in nx.shortest_path(tree, u, v) if n != "<root>"]
    except nx.NetworkXNoPath:
        return None
    path = []
    for x, y in zip(nodes, nodes[1:] + [None]):
        step = None if y is None else (tree.edges[x, y]["branch"] if tree.has_edge(x, y)
                                       else ROOTS)
        path.append((x.owner, step))
    return path


def _loop_message(graph, tree_edges, u, v, owner, roots) -> str:
    """Name the components on the loop that the connection u–v closes."""
    tree = nx.Graph()
    tree.add_nodes_from([u, v])
    for a, b, key, data in graph.edges(keys=True, data=True):
        if "<root>" not in (a, b) and (id(data["owner"]), id(a), id(b), key) in tree_edges:
            tree.add_edge(a, b)
    try:
        path = nx.shortest_path(tree, u, v)
    except nx.NetworkXNoPath:
        # u and v hang on different roots: the connection joins two roots.
        def root_of(x):
            part = nx.node_connected_component(tree, x)
            return next((r for r in roots if r in part), None)
        ru, rv = root_of(u), root_of(v)
        names = [r.owner.path if r is not None else "?" for r in (ru, rv)]
        return (f"{_where(owner)}: connect({u.owner.path}, {v.owner.path}) joins two roots "
                f"rigidly: '{names[0]}' and '{names[1]}' both fix the orientation (e.g. a World "
                f"and a Fixed frame connected through rigid parts); remove one root or put a "
                f"joint between them — the closed chain is a kinematic loop, not supported "
                f"by this connector type yet")
    members = []
    for var in path:
        comp_path = var.owner.owner.path if var.owner is not None and var.owner.owner else "?"
        if comp_path not in members:
            members.append(comp_path)
    return (f"{_where(owner)}: connect({u.owner.path}, {v.owner.path}) closes a kinematic loop "
            f"through {' -> '.join(members)}; closed loops are not supported by this connector "
            f"type yet (remove one connection or replace a joint of the loop by a force "
            f"element)")


def choose_roots_early(fl, roots, potential, branches):
    """Potential-root choice from component roles and connect statements (needed while
    equations are still being collected)."""
    graph = nx.Graph()
    for _, _, var in fl.overdetermined:
        graph.add_node(var)
    for a, b, _ in branches:
        graph.add_edge(a, b)
    # Leaves' equations() are still running: the composite models' connections are known.
    for item in (item for comp in fl.components if comp.components()
                 for item in fl.connects.get(id(comp), ())):
        conns = [c for c in item.items if isinstance(c, Connector)]
        for c1, c2 in zip(conns, conns[1:]):
            for key, var in c1._variables.items():
                if var.kind == "overdetermined" and key in c2._variables:
                    graph.add_edge(var, c2._variables[key])
    return {id(var) for var in _choose_potential_roots(graph, roots, potential)}


def _choose_potential_roots(graph, roots, potential):
    """In every connected part of the orientation graph without a definite root, the
    potential root with the lowest (priority, declaration order) becomes the root. A part
    with neither is an error. Linear in the graph size."""
    parts = list(nx.connected_components(graph))
    part_of = {var: k for k, nodes in enumerate(parts) for var in nodes}
    rooted = {part_of[r] for r in roots}
    best: dict[int, tuple] = {}
    for i, (var, priority) in enumerate(potential):
        k = part_of[var]
        if k not in rooted and (k not in best or (priority, i) < best[k][0]):
            best[k] = ((priority, i), var)
    for k, nodes in enumerate(parts):
        if k not in rooted and k not in best:
            names = sorted(v.path for v in nodes)
            raise BalanceError(
                f"the orientation of {', '.join(names[:6])} is not determined: no root "
                f"(world/fixed frame) and no potential root is connected to it; connect it "
                f"to a root")
    return [var for _, var in sorted(best.values(), key=lambda item: item[0][1])]
