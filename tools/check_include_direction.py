#!/usr/bin/env python3
"""Checks that every #include "folder/..." under src/ goes the way the modules link (issue #31).

The module graph is read from src/*/CMakeLists.txt: parley_module(NAME SOURCES ... DEPS ...),
parley_test(NAME SOURCES ... DEPS ...) (which also links parley_testing), add_library /
add_executable and target_link_libraries naming parley_* targets. Every source file under src/
(.cpp, .c, .h) belongs to the target that compiles it; a header belongs to the target that
compiles the source of the same name beside it, else to its folder's module (parley_<folder>).
A test-only header (no source of its own, "test" in its name, such as
stages/segmentation_test_support.h) is compiled only into the files that include it, so its
includes are checked against what every one of its includers may include.
An include of a header of target T from a file of target S is allowed when T is S or is reachable
from S through its links (PUBLIC or PRIVATE: a target's own sources see what it links, and
parley_module links its DEPS publicly, so they pass on).

A header of no target's own that is not a test helper (api/handles.h) is checked the same way, a
file that belongs to no target and that no target's file includes fails, and so does a module whose
library targets link other modules than docs/architecture.md draws for it.

Namespaces say their folder: every parley namespace a file under src/<folder>/ opens is
parley::<folder> or one inside it (parley::<folder>::testing for test support), and in src/core/
only parley itself. Namespaces of other libraries (a forward declaration of httplib's, a
specialization in std or fmt) are not parley's and may be opened anywhere.

Run: python3 tools/check_include_direction.py [SOURCE_DIR]   (ctest -R include_direction)
Exit status 0 when every include is allowed, 1 (listing each one) when not.
"""

import re
import sys
from pathlib import Path

# Includes known to go the wrong way, as (includer relative to src/, included header). This list
# may only shrink: fix the dependency (or the code) and remove the entry.
ALLOWED_EXCEPTIONS: set = set()

SOURCE_SUFFIXES = (".cpp", ".c", ".h")
TARGET_KEYWORDS = {"STATIC", "SHARED", "MODULE", "OBJECT", "INTERFACE", "EXCLUDE_FROM_ALL",
                   "PUBLIC", "PRIVATE", "ALIAS", "IMPORTED", "GLOBAL", "WIN32", "MACOSX_BUNDLE"}
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([A-Za-z0-9_]+)/([^"]+)"')
LOCAL_INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"/]+)"')
# Comments, string and character literals, preprocessor lines, namespace openings and braces.
NAMESPACE_TOKEN_RE = re.compile(
    r'//[^\n]*|/\*.*?\*/|R"(\w*)\(.*?\)\1"|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\''
    r'|^[ \t]*#(?:[^\n]*\\\n)*[^\n]*'
    r'|\b(?:inline\s+)?namespace\b\s*([A-Za-z_][\w:]*)?\s*(=|\{)|[{}]', re.S | re.M)
CALL_RE = re.compile(r"\b(parley_module|parley_test|add_library|add_executable|"
                     r"target_link_libraries)\s*\(", re.IGNORECASE)


def strip_comments(text):
    """Drops CMake # comments (outside double-quoted strings)."""
    lines = []
    for line in text.splitlines():
        out, quoted = [], False
        for ch in line:
            if ch == '"':
                quoted = not quoted
            elif ch == "#" and not quoted:
                break
            out.append(ch)
        lines.append("".join(out))
    return "\n".join(lines)


def calls(text):
    """Yields (command, arguments) for each call of interest, arguments split on whitespace."""
    for match in CALL_RE.finditer(text):
        depth, i = 1, match.end()
        while i < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        args = re.findall(r'"[^"]*"|[^\s"]+', text[match.end():i - 1])
        yield match.group(1).lower(), [a.strip('"') for a in args]


class Graph:
    def __init__(self):
        self.links = {}    # target -> set of parley_* targets it links
        self.folder = {}   # target -> folder under src/ that declares it
        self.sources = {}  # path relative to src/ -> target compiling it (the first declared)
        self.compiled_by = {}  # path relative to src/ -> every target compiling it
        self.tests = set()  # targets declared with parley_test

    def add_target(self, name, folder):
        self.links.setdefault(name, set())
        self.folder.setdefault(name, folder)

    def add_sources(self, target, folder, names):
        for name in names:
            if "$" in name or "/" in name:
                continue  # generated in the build tree, or outside this folder
            self.sources.setdefault(f"{folder}/{name}", target)
            self.compiled_by.setdefault(f"{folder}/{name}", set()).add(target)

    def reachable(self, target):
        seen, stack = {target}, [target]
        while stack:
            for dep in self.links.get(stack.pop(), ()):
                if dep not in seen:
                    seen.add(dep)
                    stack.append(dep)
        return seen


def sections(args, keywords):
    """Splits parley_module/parley_test arguments after the name into keyword sections."""
    result, current = {k: [] for k in keywords}, None
    for arg in args:
        if arg in keywords:
            current = arg
        elif current:
            result[current].append(arg)
    return result


def read_graph(src):
    graph = Graph()
    for cmakelists in sorted(src.glob("*/CMakeLists.txt")):
        folder = cmakelists.parent.name
        text = strip_comments(cmakelists.read_text(encoding="utf-8"))
        for command, args in calls(text):
            if not args:
                continue
            name, rest = args[0], args[1:]
            if command in ("parley_module", "parley_test"):
                target = f"parley_{name}" if command == "parley_module" else name
                parts = sections(rest, ("SOURCES", "DEPS"))
                graph.add_target(target, folder)
                graph.add_sources(target, folder, parts["SOURCES"])
                graph.links[target].update(d for d in parts["DEPS"] if d.startswith("parley"))
                if command == "parley_test":
                    graph.links[target].add("parley_testing")
                    graph.tests.add(target)
            elif command in ("add_library", "add_executable"):
                if "ALIAS" in rest or "IMPORTED" in rest:
                    continue
                graph.add_target(name, folder)
                graph.add_sources(name, folder, [a for a in rest if a not in TARGET_KEYWORDS])
            elif command == "target_link_libraries":
                graph.links.setdefault(name, set()).update(
                    a for a in rest if a.startswith("parley") and "::" not in a)
    return graph


def owner(graph, relative, folders):
    """The target a file under src/ belongs to, or None when its folder has no target."""
    if relative in graph.sources:
        return graph.sources[relative]
    folder = relative.split("/", 1)[0]
    if relative.endswith(".h"):
        stem = relative[:-2]
        for suffix in (".cpp", ".c"):
            if stem + suffix in graph.sources:
                return graph.sources[stem + suffix]
    if f"parley_{folder}" in graph.links:
        return f"parley_{folder}"
    return folders.get(folder)


def is_test_header(graph, relative, name):
    """A header of no source of its own, named as a test helper (*_test_support.h, ...)."""
    stem = relative[:-2]
    return (relative.endswith(".h") and "test" in name
            and stem + ".cpp" not in graph.sources and stem + ".c" not in graph.sources)


def documented_dependencies(architecture):
    """Module -> the modules docs/architecture.md draws it using, from the tree under 'Which
    module may use which' (continuation lines add to the module above; external libraries in
    brackets and what follows '->' are not modules)."""
    text = architecture.read_text(encoding="utf-8")
    section = text.split("## Which module may use which", 1)[1]
    block = section.split("```", 2)[1]
    result, current = {}, None
    for raw in block.splitlines()[1:]:
        rest = raw.lstrip("│├└─ ")
        if not rest or rest.startswith("(") or rest.startswith("python/"):
            continue
        if current is None or "├──" in raw or "└──" in raw:
            current, _, rest = rest.partition(" ")
            result[current] = set()
        rest = rest.split("->", 1)[0].split("(", 1)[0]
        result[current].update(w.strip() for w in rest.split(",") if w.strip())
    return result


def built_dependencies(graph):
    """Folder -> the folders its library targets link (tests, test support and benchmarks aside)."""
    result = {}
    for target, folder in graph.folder.items():
        if (target in graph.tests or target.endswith("_testing") or target.endswith("_test")
                or folder == "testing"):
            continue
        deps = result.setdefault(folder, set())
        for dep in graph.links.get(target, ()):
            dep_folder = graph.folder.get(dep)
            if dep_folder and dep_folder not in (folder, "testing"):
                deps.add(dep_folder)
    return result


def opened_namespaces(text):
    """(line, fully qualified name) of each named namespace a C++ source opens, nested or not."""
    stack, found = [], []  # per open brace: the namespace's own name, or None
    for match in NAMESPACE_TOKEN_RE.finditer(text):
        token = match.group(0)
        if token == "{":
            stack.append(None)
        elif token == "}":
            if stack:
                stack.pop()
        elif match.group(3) == "{":
            name = match.group(2)
            if name is not None:  # an anonymous one keeps its names in the enclosing namespace
                found.append((text.count("\n", 0, match.start()) + 1,
                              "::".join([n for n in stack if n] + [name])))
            stack.append(name)
    return found


def namespace_violations(src):
    """Files under src/<folder>/ that open a parley namespace other than their folder's."""
    violations = []
    for path in sorted(p for p in src.rglob("*") if p.suffix in SOURCE_SUFFIXES and p.is_file()):
        relative = path.relative_to(src).as_posix()
        if "/" not in relative:
            continue
        folder = relative.split("/", 1)[0]
        expected = "parley" if folder == "core" else f"parley::{folder}"
        text = path.read_text(encoding="utf-8", errors="replace")
        for line, name in opened_namespaces(text):
            if name != "parley" and not name.startswith("parley::"):
                continue  # another library's namespace
            if name == expected or (folder != "core" and name.startswith(expected + "::")):
                continue
            below = "" if folder == "core" else f" or one inside it ({expected}::testing, ...)"
            violations.append(f"src/{relative}:{line}: opens namespace {name}; code in "
                              f"src/{folder}/ belongs in {expected}{below}")
    return violations


def main(argv):
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent
    src = root / "src"
    graph = read_graph(src)
    # A folder without a parley_<folder> target (api: the shared library `parley`) falls back to
    # the one target it declares.
    folders = {}
    for target, folder in graph.folder.items():
        folders.setdefault(folder, []).append(target)
    folders = {f: t[0] for f, t in folders.items() if len(t) == 1}

    files, includes = {}, {}  # relative path -> owner; relative path -> [(line, header)]
    for path in sorted(p for p in src.rglob("*") if p.suffix in SOURCE_SUFFIXES and p.is_file()):
        relative = path.relative_to(src).as_posix()
        files[relative] = owner(graph, relative, folders)
        found = includes[relative] = []
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        for number, line in enumerate(lines, 1):
            match = INCLUDE_RE.match(line)
            if match and (src / match.group(1)).is_dir():
                # not <...>, "parley/parley.h" (include/) or a name without a module folder
                found.append((number, f"{match.group(1)}/{match.group(2)}"))
                continue
            local = LOCAL_INCLUDE_RE.match(line)
            if local and (path.parent / local.group(1)).is_file():
                # a header beside the includer, named without its folder
                found.append((number, (path.parent / local.group(1)).relative_to(src).as_posix()))
    includers = {}
    for relative, found in includes.items():
        for _, header in found:
            includers.setdefault(header, set()).add(relative)

    memo = {}

    def allowed_for(relative, visiting=frozenset()):
        """What a file may include, and on whose behalf (a target, or a test header's includers)."""
        if relative in memo:
            return memo[relative]
        name = relative.rsplit("/", 1)[-1]
        users = includers.get(relative, set()) - visiting - {relative}
        # A test helper, or a header of no target's own (api/handles.h in the shared library's
        # folder), may include what every file that includes it may.
        if (is_test_header(graph, relative, name) or files.get(relative) is None) and users:
            result, who = None, set()
            for user in sorted(users):
                user_allowed, user_who = allowed_for(user, visiting | {relative})
                if user_allowed is None:
                    continue
                result = user_allowed if result is None else result & user_allowed
                who |= user_who
            if result is not None:
                memo[relative] = (result, who)
                return memo[relative]
        target = files.get(relative)
        memo[relative] = (None, set()) if target is None else (graph.reachable(target), {target})
        return memo[relative]

    violations, unowned, checked = [], [], 0
    for relative, found in includes.items():
        allowed, who = allowed_for(relative)
        if allowed is None:
            unowned.append(relative)
            continue
        for number, header in found:
            target = owner(graph, header, folders)
            checked += 1
            if target is None or target in allowed:
                continue
            if (relative, header) in ALLOWED_EXCEPTIONS:
                continue
            # A test that compiles a header's source itself (to reach an executable's code) may
            # include that header.
            stem = header[:-2] if header.endswith(".h") else None
            if stem and any(who & graph.compiled_by.get(stem + suffix, set())
                            for suffix in (".cpp", ".c")):
                continue
            violations.append(
                f"src/{relative}:{number}: {', '.join(sorted(who))} includes \"{header}\" of "
                f"{target}, which it does not link; it may include: {', '.join(sorted(allowed))}")

    architecture = root / "docs" / "architecture.md"
    if architecture.is_file():
        drawn, built = documented_dependencies(architecture), built_dependencies(graph)
        for folder in sorted(set(drawn) | set(built)):
            if folder == "testing":
                continue
            if drawn.get(folder) != built.get(folder):
                violations.append(
                    f"docs/architecture.md draws {folder} using "
                    f"{', '.join(sorted(drawn.get(folder, ()))) or 'nothing'}, but its targets "
                    f"in src/{folder}/CMakeLists.txt link "
                    f"{', '.join(sorted(built.get(folder, ()))) or 'nothing'}: make them agree")
    violations.extend(namespace_violations(src))
    for relative in unowned:
        violations.append(f"src/{relative}: belongs to no target and no file of a target "
                          "includes it; add it to a module's SOURCES or delete it")
    for violation in violations:
        print(violation)
    if violations:
        print(f"{len(violations)} problem(s) with the module dependencies or namespaces "
              "(docs/architecture.md, 'Which module may use which')")
        return 1
    print(f"include direction: {checked} includes of module headers, all allowed "
          f"({len(graph.links)} targets)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
