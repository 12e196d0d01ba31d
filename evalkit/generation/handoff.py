"""The hand-off between the processes of one `accelerate launch`: the main process decides (opens the experiment,
lists the work), every process reads the same decision. Written once here for `evalkit bench` and `evalkit generate`.

The decision travels as a small JSON file beside the database (the processes share a filesystem, as they share the
database). A failure on the main process travels too, so the others raise the same error instead of waiting forever.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from ..errors import EvalkitError


def share_decision(state, path: Path, decide: Callable[[], dict]) -> dict:
    """Run `decide()` on the main process only and return its result on every process (`state`: accelerate's
    PartialState). An EvalkitError raised by `decide` is raised on every process. The file is gone afterwards."""
    path = Path(path)
    crash = None
    if state.is_main_process:
        try:
            decision = decide()
        except EvalkitError as e:
            decision = {"error": e.what, "fix": e.fix}
        except Exception as e:  # a bug: the main process shows its traceback; the others must not hang or die
            crash = e           # on a dropped connection, so they stop with a line that sends the user there
            decision = {"error": f"the main process failed while deciding the work: {type(e).__name__}: {e}",
                        "fix": "read the main process's traceback above, and report it if it is not about your "
                               "files"}
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(decision, ensure_ascii=False))
        tmp.replace(path)  # whole or absent: a reader never sees half a file
    state.wait_for_everyone()
    decision = json.loads(path.read_text())
    state.wait_for_everyone()  # everyone has read it before it goes
    if state.is_main_process:
        path.unlink(missing_ok=True)
    if crash is not None:
        raise crash
    if "error" in decision:
        raise EvalkitError(decision["error"], decision["fix"])
    return decision
