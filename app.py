"""The rating app, as a Hugging Face Space runs it (`app_file: app.py`): the same as `evalkit serve`.

    python app.py [--config PATH] [--db PATH] [--host HOST] [--port N] [--no-prepare]
"""

import sys

from evalkit.cli import cli

if __name__ == "__main__":
    # the serve command itself, not the group: its usage line then reads as it is typed, `app.py [OPTIONS]`
    sys.exit(cli.commands["serve"].main(sys.argv[1:], prog_name="app.py", help_option_names=["-h", "--help"]))
