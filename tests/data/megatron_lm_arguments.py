#!/usr/bin/env python3
"""Writes megatron_lm_arguments.txt: every option string Megatron-LM's parser has,
with the values its `choices` allow.

Reads the source of a Megatron-LM checkout (bare git is enough) without importing it
(Megatron-LM needs torch): the literal option strings of every add_argument call in
megatron/training/arguments.py, and the flags its ArgumentGroupFactory calls generate
from the config dataclasses (megatron/training/argument_utils.py): one `--field-name`
per dataclass field not excluded and not init=False; a bool field whose default is not
False becomes `--no-field-name` and `--disable-field-name`; a field's
metadata["argparse_meta"]["arg_names"] overrides the names.

Choices, as argparse checks them: the literal `choices=[...]` of an add_argument
call; for a dataclass field (argument_utils.py ArgumentGroupFactory._extract_type)
the values of a Literal[...] annotation, or the member names of an Enum one
(its type handler reads `Enum[name]`), through Optional[...] and list[...];
metadata["argparse_meta"]["choices"] overrides them (a literal list, or
`[m.name for m in SomeEnum]`).

One line per option string: the flag, then its choices separated by spaces
(`--recompute-method uniform block`); a flag without choices stands alone.

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


def literal_values(node):
    """The str/int constants of a list/tuple literal, as strings; None when the
    node is not such a literal."""
    if isinstance(node, (ast.List, ast.Tuple)) and all(
            isinstance(e, ast.Constant) for e in node.elts):
        return [str(e.value) for e in node.elts]
    return None


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

    def enum_members(self, name):
        """The member names of the Enum class `name`; None when `name` is no
        Enum class under megatron/."""
        try:
            cls = self.find_class(name)
        except (SystemExit, subprocess.CalledProcessError):
            return None
        if not any("Enum" in ast.unparse(base) for base in cls.bases):
            return None
        return [node.targets[0].id for node in cls.body
                if isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)]

    def annotation_choices(self, annotation):
        """The choices argparse gets for a field of this type (_extract_type):
        a Literal's values or an Enum's member names, through Optional[...],
        `X | None` and list[...]; None for other types."""
        node = annotation
        while True:
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
                node = node.left  # `X | None`: argparse reads X.
            elif isinstance(node, ast.Subscript) and ast.unparse(node.value) in (
                    "Optional", "typing.Optional", "list", "List"):
                node = node.slice
            else:
                break
        if isinstance(node, ast.Subscript) and ast.unparse(node.value) in ("Literal",
                                                                           "typing.Literal"):
            elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            return [str(e.value) for e in elts if isinstance(e, ast.Constant)]
        if isinstance(node, ast.Name) and node.id not in dir(__builtins__):
            return self.enum_members(node.id)
        return None

    def meta_choices(self, node):
        """argparse_meta's "choices": a literal list, or the member names of an
        Enum written as `[m.name for m in SomeEnum]`."""
        values = literal_values(node)
        if values is not None:
            return values
        if (isinstance(node, ast.ListComp) and isinstance(node.elt, ast.Attribute)
                and node.elt.attr == "name" and len(node.generators) == 1
                and isinstance(node.generators[0].iter, ast.Name)):
            members = self.enum_members(node.generators[0].iter.id)
            if members is not None:
                return members
        raise SystemExit(f"choices not understood: {ast.unparse(node)}")

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
    """{option string: its choices (None without)} of a dataclass's flags."""
    flags = {}
    for name, annotation, default, keywords in source.dataclass_fields(class_name):
        if name in exclude:
            continue
        init = keywords.get("init")
        if isinstance(init, ast.Constant) and init.value is False:
            continue
        names = ["--" + name.replace("_", "-")]
        kind = ast.unparse(annotation).replace(" ", "")
        choices = None
        if kind in ("bool", "Optional[bool]", "bool|None"):
            is_false = isinstance(default, ast.Constant) and default.value is False
            if not is_false:
                names = ["--no-" + name.replace("_", "-"), "--disable-" + name.replace("_", "-")]
        else:
            choices = source.annotation_choices(annotation)
        meta = keywords.get("metadata")
        if isinstance(meta, ast.Dict):
            for k, v in zip(meta.keys, meta.values):
                if isinstance(k, ast.Constant) and k.value == "argparse_meta" and isinstance(
                        v, ast.Dict):
                    for mk, mv in zip(v.keys, v.values):
                        if isinstance(mk, ast.Constant) and mk.value == "arg_names":
                            names = literal_strings(mv)
                        if isinstance(mk, ast.Constant) and mk.value == "choices":
                            choices = source.meta_choices(mv)
        for n in names:
            flags[n] = choices
    return flags


def package_version(repo, commit):
    """MAJOR.MINOR.PATCH of megatron/core/package_info.py."""
    info = git(repo, "show", f"{commit}:megatron/core/package_info.py")
    parts = {}
    for node in ast.parse(info).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            if isinstance(node.value, ast.Constant):
                parts[node.targets[0].id] = node.value.value
    return f"{parts['MAJOR']}.{parts['MINOR']}.{parts['PATCH']}"


def main():
    repo = sys.argv[1]
    commit = git(repo, "rev-parse", sys.argv[2] if len(sys.argv) > 2 else "HEAD").strip()
    source = Source(repo, commit)
    version = package_version(repo, commit)
    flags = {}  # Option string: its choices, None without.
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
                choices = None
                for k in node.keywords:
                    if k.arg == "choices":
                        choices = literal_values(k.value)
                        if choices is None:
                            raise SystemExit(f"choices not understood: {ast.unparse(k.value)}")
                for a in node.args:
                    if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("-"):
                        flags[a.value] = choices
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
    print(f"# Megatron-Core {version} (megatron/core/package_info.py).")
    print(f"# Generated by tests/data/megatron_lm_arguments.py (data, not code); one a line:")
    print(f"# the flag, then the values its `choices` allow, if it has choices.")
    for flag in sorted(flags):
        print(" ".join([flag] + (flags[flag] or [])))


if __name__ == "__main__":
    main()
