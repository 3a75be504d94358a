#!/usr/bin/env python3
"""CTest: tools/check_include_direction.py passes a tree that keeps the rule and fails each way
one can break it (an include against the links, a file of no target, a drawing that differs from
the links, a namespace that is not its folder's), on small synthetic trees in a temporary
folder."""
import subprocess
import sys
import tempfile
from pathlib import Path

CHECK = Path(__file__).resolve().parent / "check_include_direction.py"

ARCHITECTURE = """# Architecture
## Which module may use which

```
core
└── audio     core
```
"""


def tree(root, audio_source, extra=None, architecture=ARCHITECTURE):
    src = root / "src"
    (src / "core").mkdir(parents=True)
    (src / "audio").mkdir()
    (root / "docs").mkdir()
    (root / "docs" / "architecture.md").write_text(architecture)
    (src / "core" / "CMakeLists.txt").write_text("parley_module(core SOURCES error.cpp)\n")
    (src / "core" / "error.h").write_text("#pragma once\nnamespace parley {\nvoid fail();\n}\n")
    (src / "core" / "error.cpp").write_text('#include "core/error.h"\n')
    (src / "audio" / "CMakeLists.txt").write_text(
        "parley_module(audio SOURCES decode.cpp DEPS parley_core)\n")
    (src / "audio" / "decode.h").write_text(
        "#pragma once\n// namespace parley::eval { in a comment is no namespace\n"
        "namespace httplib {\nclass Server;\n}\nnamespace parley::audio {\nnamespace {\n}\n"
        "namespace fs = std::filesystem;\nstruct Decoder {\n  int x{0};\n};\n}\n"
        "namespace parley::audio::testing {\n}\n")
    (src / "audio" / "decode.cpp").write_text(audio_source)
    for relative, text in (extra or {}).items():
        (src / relative).parent.mkdir(exist_ok=True)
        (src / relative).write_text(text)
    return subprocess.run([sys.executable, str(CHECK), str(root)], capture_output=True, text=True)


def expect(name, result, code, phrase):
    output = result.stdout + result.stderr
    if result.returncode != code or phrase not in output:
        print(f"FAIL {name}: rc {result.returncode} (wanted {code}), output:\n{output}")
        sys.exit(1)
    print(f"ok {name}")


with tempfile.TemporaryDirectory() as scratch:
    base = Path(scratch)
    expect("a tree that keeps the rule",
           tree(base / "good", '#include "audio/decode.h"\n#include "core/error.h"\n'),
           0, "all allowed")
    expect("an include against the links",
           tree(base / "upward", '#include "audio/decode.h"\n',
                {"core/error.cpp": '#include "audio/decode.h"\n'}),
           1, 'src/core/error.cpp:1: parley_core includes "audio/decode.h"')
    expect("a file of no target",
           tree(base / "orphan", '#include "audio/decode.h"\n', {"misc/stray.cpp": "\n"}),
           1, "src/misc/stray.cpp: belongs to no target")
    expect("a drawing that differs from the links",
           tree(base / "drawing", '#include "audio/decode.h"\n',
                architecture=ARCHITECTURE.replace("└── audio     core", "└── audio")),
           1, "docs/architecture.md draws audio using nothing")
    expect("a namespace of another folder",
           tree(base / "namespace", '#include "audio/decode.h"\n'
                'namespace parley::audio {\n}  // namespace parley::audio\n'
                'namespace parley::pipeline {\nvoid decode();\n}\n'),
           1, "src/audio/decode.cpp:4: opens namespace parley::pipeline; code in src/audio/ "
              "belongs in parley::audio")
    expect("a namespace nested the old way in another folder's",
           tree(base / "nested", '#include "audio/decode.h"\n'
                'namespace parley {\nnamespace eval {\n}\n}\n'),
           1, "src/audio/decode.cpp:3: opens namespace parley::eval;")
    expect("a sub-namespace in core",
           tree(base / "core_sub", '#include "audio/decode.h"\n',
                {"core/detail.h": "#pragma once\nnamespace parley::detail {\n}\n"}),
           1, "src/core/detail.h:2: opens namespace parley::detail; code in src/core/ belongs in "
              "parley\n")
