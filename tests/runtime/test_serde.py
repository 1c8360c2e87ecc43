"""wfctl's `devl` payloads against the real `devalue` package, and the wrappers the Node
runtime puts around them (`gzip`/`zstd`, spec >= 5; `encr`/`encp` refused clearly).

The devalue side is the package the DevKit runtime installs (tests/judge.py installs it into
.cache/node-runtime on first use); only node/npm missing skips those tests.
"""

from __future__ import annotations

import base64
import gzip
import json
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import zstandard

from wfctl.runtime import serde

VALUES: list[Any] = [
    None,
    True,
    0,
    -7,
    2**60,
    1.5,
    'é ✓ </script> \u2028 \x01 \t "q" \\',
    [1, [2, "x"], {"k": None}],
    {"order": "o-1", "items": [{"sku": "a", "n": 2}], "when": datetime(2026, 1, 2, tzinfo=UTC)},
]

# Node: parse wfctl's text with devalue, then stringify it back; and a real Error, reduced the
# way the DevKit reduces one (a custom reducer `Error` -> {name, message, stack}), gzipped the
# way the runtime gzips errors.
NODE = r"""
const devalue = require('devalue');
const zlib = require('zlib');
const input = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const parsed = input.map((t) => devalue.parse(t));
const again = parsed.map((v) => devalue.stringify(v));
const err = new TypeError('boom');
const text = devalue.stringify({ error: err }, {
  Error: (v) => v instanceof Error && { name: v.name, message: v.message, stack: v.stack },
});
const inner = Buffer.concat([Buffer.from('devl'), Buffer.from(text)]);
const wrapped = Buffer.concat([Buffer.from('gzip'), zlib.gzipSync(inner)]);
console.log(JSON.stringify({ again, error: wrapped.toString('base64') }));
"""


@pytest.fixture(scope="module")
def node_devalue() -> Path:
    if not (shutil.which("node") and shutil.which("npm")):
        pytest.skip("node/npm not available: the devalue comparison needs them")
    from tests.judge import RUNTIME_CACHE, install_runtime

    install_runtime()
    return RUNTIME_CACHE


def test_devl_text_is_what_devalue_reads_and_writes(node_devalue: Path) -> None:
    texts = [serde.stringify(v) for v in VALUES]
    proc = subprocess.run(
        ["node", "-e", NODE],
        cwd=node_devalue,
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    out = json.loads(proc.stdout)
    # devalue re-stringifies what it parsed from wfctl's text to the very same text
    assert out["again"] == texts
    # and wfctl reads the Node runtime's gzip-wrapped, reducer-tagged Error
    value = serde.loads(base64.b64decode(out["error"]))
    assert value["error"]["$type"] == "Error"
    assert value["error"]["value"]["name"] == "TypeError"
    assert serde.error_message(value["error"]) == "boom"


@pytest.mark.parametrize("value", VALUES)
def test_round_trip_plain_and_compressed(value: Any) -> None:
    raw = serde.dumps(value)
    assert raw.startswith(b"devl") and serde.loads(raw) == value
    assert serde.loads(b"gzip" + gzip.compress(raw)) == value
    assert serde.loads(b"zstd" + zstandard.ZstdCompressor().compress(raw)) == value


def test_encrypted_payloads_are_refused_by_name() -> None:
    for prefix in (b"encr", b"encp"):
        with pytest.raises(serde.PayloadUnreadable, match="encrypted"):
            serde.loads(prefix + b"\x00" * 40)


def test_error_message_of_both_runtimes() -> None:
    assert serde.error_message(serde.error_value(ValueError("bad input"))) == "bad input"
    node = {"$type": "Error", "value": {"name": "WorkflowNotRegisteredError", "message": "gone"}}
    assert serde.error_message(node) == "gone"
    assert serde.error_message("plain") == "plain"
