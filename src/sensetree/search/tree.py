"""The meaning tree (design §3): relevance heat over the folder tree, from the dense leg alone."""

from __future__ import annotations

from .. import paths
from .types import TreeNode


def tree_limit(limit: int) -> int:
    return max(10, min(1000, limit))


def build_tree(file_scores: dict[str, float], tops: list[str]) -> TreeNode | None:
    """A trie of path components under each of ``tops``; a folder scores the max of its descendants.

    With one top folder it is the root; with several (all roots, no scope) they hang under
    an unnamed node. Children are sorted by score, descending, then by name.
    """
    nodes = [_subtree(top, {p: s for p, s in file_scores.items() if paths.is_under(p, top)}) for top in tops]
    if not nodes:
        return None
    if len(nodes) == 1:
        return nodes[0]
    root = TreeNode(name="", path="", is_dir=True, children=nodes)
    root.score = max((n.score for n in nodes), default=0.0)
    root.children.sort(key=lambda n: (-n.score, n.name))
    return root


def _subtree(top: str, scores: dict[str, float]) -> TreeNode:
    top = paths.normalize(top)
    sep = "\\" if paths.is_windows_path(top) else "/"
    root = TreeNode(name=paths.name_of(top) or top, path=top, is_dir=True)
    for path, score in scores.items():
        node = root
        relative = path[len(top) :].strip(sep)
        parts = relative.split(sep) if relative else []
        for depth, part in enumerate(parts):
            child = next((c for c in node.children if c.name == part), None)
            if child is None:
                child_path = node.path.rstrip(sep) + sep + part
                child = TreeNode(name=part, path=child_path, is_dir=depth < len(parts) - 1)
                node.children.append(child)
            node = child
        node.score = max(node.score, score)
    _propagate(root)
    return root


def _propagate(node: TreeNode) -> float:
    for child in node.children:
        node.score = max(node.score, _propagate(child))
    node.children.sort(key=lambda n: (-n.score, n.name))
    return node.score
