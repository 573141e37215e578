#!/usr/bin/env python3
"""Writes megatron_lm_arguments.txt: every option string Megatron-LM's parser has.

Reads the source of a Megatron-LM checkout (bare git is enough) without importing it
(Megatron-LM needs torch): the literal option strings of every add_argument call in
megatron/training/arguments.py, and the flags its ArgumentGroupFactory calls generate
from the config dataclasses (megatron/training/argument_utils.py): one `--field-name`
per dataclass field not excluded and not init=False; a bool field whose default is not
False becomes `--no-field-name` and `--disable-field-name`; a field's
metadata["argparse_meta"]["arg_names"] overrides the names.

    tests/data/megatron_lm_arguments.py /work/.mirror/NVIDIA+Megatron-LM/repo [COMMIT] \
        > tests/data/megatron_lm_arguments.txt
"""

import ast
import subprocess
import sys

ARGUMENTS_PY = "megatron/training/arguments.py"


def git(repo, *args):
    return subprocess.run(["git", "--git-dir", repo, *args], check=True, capture_output=True,
                          text=True).stdout


def literal_strings(node):
    """The string constants of a list/tuple literal; [] for anything else."""
    if isinstance(node, (ast.List, ast.Tuple)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant)
                and isinstance(e.value, str)]
    return []


class Source:
    def __init__(self, repo, commit):
        self.repo, self.commit = repo, commit
        self.trees = {}

    def tree(self, path):
        if path not in self.trees:
            self.trees[path] = ast.parse(git(self.repo, "show", f"{self.commit}:{path}"))
        return self.trees[path]

    def find_class(self, name):
        """The ClassDef of the class `name` under megatron/ (its one definition)."""
        hits = git(self.repo, "grep", "-l", "-E", f"^class {name}\\b", self.commit, "--",
                   "megatron").split()
        for hit in hits:
            path = hit.split(":", 1)[1]
            for node in self.tree(path).body:
                if isinstance(node, ast.ClassDef) and node.name == name:
                    return node
        raise SystemExit(f"class {name} not found")

    def dataclass_fields(self, name):
        """(name, annotation, default, field keywords) of a dataclass, bases first."""
        cls = self.find_class(name)
        fields = {}
        for base in cls.bases:
            if isinstance(base, ast.Name) and base.id not in ("object", "Enum"):
                for f in self.dataclass_fields(base.id):
                    fields[f[0]] = f
        for node in cls.body:
            if not isinstance(node, ast.AnnAssign) or not isinstance(node.target, ast.Name):
                continue
            if "ClassVar" in ast.unparse(node.annotation):
                continue
            default, keywords = node.value, {}
            if (isinstance(default, ast.Call) and isinstance(default.func, ast.Name)
                    and default.func.id == "field"):
                keywords = {k.arg: k.value for k in default.keywords}
                default = keywords.get("default")
            fields[node.target.id] = (node.target.id, node.annotation, default, keywords)
        return list(fields.values())


def factory_flags(source, class_name, exclude):
    flags = []
    for name, annotation, default, keywords in source.dataclass_fields(class_name):
        if name in exclude:
            continue
        init = keywords.get("init")
        if isinstance(init, ast.Constant) and init.value is False:
            continue
        names = ["--" + name.replace("_", "-")]
        kind = ast.unparse(annotation).replace(" ", "")
        if kind in ("bool", "Optional[bool]", "bool|None"):
            is_false = isinstance(default, ast.Constant) and default.value is False
            if not is_false:
                names = ["--no-" + name.replace("_", "-"), "--disable-" + name.replace("_", "-")]
        meta = keywords.get("metadata")
        if isinstance(meta, ast.Dict):
            for k, v in zip(meta.keys, meta.values):
                if isinstance(k, ast.Constant) and k.value == "argparse_meta" and isinstance(
                        v, ast.Dict):
                    for mk, mv in zip(v.keys, v.values):
                        if isinstance(mk, ast.Constant) and mk.value == "arg_names":
                            names = literal_strings(mv)
        flags.extend(names)
    return flags


def main():
    repo = sys.argv[1]
    commit = git(repo, "rev-parse", sys.argv[2] if len(sys.argv) > 2 else "HEAD").strip()
    source = Source(repo, commit)
    flags = set()
    for function in ast.walk(source.tree(ARGUMENTS_PY)):
        if not isinstance(function, ast.FunctionDef):
            continue
        lists = {}  # Local names bound to list literals (the exclude lists).
        for node in ast.walk(function):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(
                    node.targets[0], ast.Name) and isinstance(node.value, ast.List):
                lists[node.targets[0].id] = literal_strings(node.value)
        for node in ast.walk(function):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "add_argument":
                flags.update(a.value for a in node.args if isinstance(a, ast.Constant)
                             and isinstance(a.value, str) and a.value.startswith("-"))
            elif isinstance(func, ast.Name) and func.id == "ArgumentGroupFactory":
                exclude = []
                for k in node.keywords:
                    if k.arg == "exclude":
                        exclude = (lists.get(k.value.id, []) if isinstance(k.value, ast.Name)
                                   else literal_strings(k.value))
                flags.update(factory_flags(source, node.args[0].id, set(exclude)))
    print(f"# Megatron-LM's command-line flags: every option string of the parser that")
    print(f"# megatron/training/arguments.py builds, at NVIDIA/Megatron-LM commit")
    print(f"# {commit}.")
    print(f"# Generated by tests/data/megatron_lm_arguments.py (data, not code); one a line.")
    for flag in sorted(flags):
        print(flag)


if __name__ == "__main__":
    main()
