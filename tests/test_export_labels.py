"""Exported graphs carry a ``label`` per node, so Graphviz, Gephi and yEd show words, not indices."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from attnsym.graphs import export, layered_graph, mlp_graph, routing_graph

TOKENS = ["the", "cat", "sat"]


def _graphs():
    A = np.full((3, 3), 1 / 3)
    return {
        "routing": (routing_graph(A, tokens=TOKENS), TOKENS),
        "layered": (layered_graph(np.stack([A[None], A[None]]), tokens=TOKENS), TOKENS * 3),
        "mlp": (mlp_graph(np.eye(2)), ["x1", "x2", "y1", "y2"]),
        "routing, default labels": (routing_graph(A), ["1", "2", "3"]),  # token numbers count from 1
    }


def _labels(path, fmt):
    text = path.read_text()
    if fmt == "dot":
        return {int(node): label for node, label in re.findall(r'^\s*(\d+) \[.*?"label"="([^"]*)"', text, re.M)}
    root = ET.parse(path).getroot()
    if fmt == "gexf":
        return {int(el.get("id")): el.get("label") for el in root.iter() if el.tag.endswith("}node")}
    key = next(el.get("id") for el in root.iter() if el.tag.endswith("}key") and el.get("attr.name") == "label"
               and el.get("for") == "node")
    return {int(node.get("id")): next(d.text for d in node if d.get("key") == key)
            for node in root.iter() if node.tag.endswith("}node")}


@pytest.mark.parametrize("fmt", ["dot", "gexf", "graphml"])
@pytest.mark.parametrize("which", list(_graphs()))
def test_every_node_is_labelled_with_its_word(tmp_path, fmt, which):
    G, words = _graphs()[which]
    path = export(G, tmp_path / f"g.{fmt}")
    labels = _labels(path, fmt)
    assert [labels[node] for node in sorted(G)] == words
