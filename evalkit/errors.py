"""One exception type for everything a user can fix: it names the thing and the fix.

The CLI turns it into one clear line and a non-zero exit; the app shows it in the UI.
"""


class EvalkitError(Exception):
    """A problem the user can fix. `what` names the object, `fix` says how."""

    def __init__(self, what: str, fix: str = ""):
        self.what = what
        self.fix = fix
        super().__init__(f"{what}" + (f"\n  fix: {fix}" if fix else ""))
