"""Render a kustomization as ``kubectl kustomize`` does, for the features Brain's
manifests use, so the manifest tests need no kubectl: resources (files and
directories), ``namespace``, ``images``, ``secretGenerator`` and ``configMapGenerator``
with literals and no name hash, and JSON 6902 ``patches`` aimed at one kind and name.
Anything else raises, so a manifest that starts using more fails loudly here; where
kubectl is installed a test checks this renders exactly what it renders.
"""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import Any

import yaml

KNOWN_FIELDS = {
    "apiVersion",
    "kind",
    "resources",
    "namespace",
    "images",
    "secretGenerator",
    "configMapGenerator",
    "patches",
}
# Kinds without a namespace (of those a kustomization might hold).
CLUSTER_SCOPED = {
    "Namespace",
    "ClusterRole",
    "ClusterRoleBinding",
    "CustomResourceDefinition",
    "PersistentVolume",
    "StorageClass",
}
POD_TEMPLATE_KINDS = {"Deployment", "StatefulSet", "DaemonSet", "Job", "ReplicaSet"}


class Unsupported(ValueError):
    """The kustomization uses something this renderer does not do."""


def render(directory: Path) -> list[dict[str, Any]]:
    """The objects of the kustomization in ``directory``."""
    spec = yaml.safe_load((directory / "kustomization.yaml").read_text())
    unknown = set(spec) - KNOWN_FIELDS
    if unknown:
        raise Unsupported(f"{directory}: {sorted(unknown)}")
    objects: list[dict[str, Any]] = []
    for resource in spec.get("resources", []):
        path = (directory / resource).resolve()
        if path.is_dir():
            objects += render(path)
        else:
            objects += [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    objects += [_generated("Secret", g) for g in spec.get("secretGenerator", [])]
    objects += [_generated("ConfigMap", g) for g in spec.get("configMapGenerator", [])]
    for patch in spec.get("patches", []):
        _patch(objects, patch)
    for image in spec.get("images", []):
        _set_image(objects, image)
    if "namespace" in spec:
        _set_namespace(objects, spec["namespace"])
    return objects


def _generated(kind: str, generator: dict) -> dict[str, Any]:
    if set(generator) - {"name", "literals", "options"} or not generator.get("options", {}).get(
        "disableNameSuffixHash"
    ):
        raise Unsupported(f"{kind} generator {generator.get('name')}: literals, no hash only")
    pairs = dict(literal.split("=", 1) for literal in generator.get("literals", []))
    made: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": kind,
        "metadata": {"name": generator["name"]},
    }
    if kind == "Secret":
        made["type"] = "Opaque"
        made["data"] = {k: base64.b64encode(v.encode()).decode() for k, v in pairs.items()}
    else:
        made["data"] = pairs
    return made


def _patch(objects: list[dict], patch: dict) -> None:
    target = patch.get("target", {})
    if set(patch) != {"target", "patch"} or set(target) - {"kind", "name"}:
        raise Unsupported(f"patch {patch}: inline JSON 6902 with a kind and name target only")
    operations = yaml.safe_load(patch["patch"])
    matched = [
        o
        for o in objects
        if o["kind"] == target.get("kind", o["kind"])
        and o["metadata"]["name"] == target.get("name", o["metadata"]["name"])
    ]
    if not matched:
        raise Unsupported(f"patch target {target} matches nothing")
    for obj in matched:
        for operation in operations:
            _apply(obj, operation)


def _apply(obj: dict, operation: dict) -> None:
    *parents, last = [_unescape(p) for p in operation["path"].split("/")[1:]]
    node: Any = obj
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    op = operation["op"]
    if isinstance(node, list):
        index = len(node) if last == "-" else int(last)
        if op == "add":
            node.insert(index, copy.deepcopy(operation["value"]))
        elif op == "replace":
            node[index] = copy.deepcopy(operation["value"])
        elif op == "remove":
            del node[index]
        else:
            raise Unsupported(f"op {op}")
    elif op in ("add", "replace"):
        if op == "replace" and last not in node:
            raise Unsupported(f"replace of a missing {operation['path']}")
        node[last] = copy.deepcopy(operation["value"])
    elif op == "remove":
        del node[last]
    else:
        raise Unsupported(f"op {op}")


def _unescape(part: str) -> str:
    return part.replace("~1", "/").replace("~0", "~")


def _set_image(objects: list[dict], image: dict) -> None:
    name = image["name"]
    for obj in objects:
        if obj["kind"] not in POD_TEMPLATE_KINDS:
            continue
        pod = obj["spec"]["template"]["spec"]
        for container in pod.get("initContainers", []) + pod.get("containers", []):
            current = container["image"]
            if current == name or current.startswith(f"{name}:"):
                new_name = image.get("newName", name)
                tag = image.get("newTag")
                container["image"] = f"{new_name}:{tag}" if tag else new_name


def _set_namespace(objects: list[dict], namespace: str) -> None:
    for obj in objects:
        if obj["kind"] not in CLUSTER_SCOPED:
            obj["metadata"]["namespace"] = namespace
        if obj["kind"] in ("RoleBinding", "ClusterRoleBinding"):
            for subject in obj.get("subjects", []):
                if subject["kind"] == "ServiceAccount":
                    subject["namespace"] = namespace
