"""What several `kb` commands share: the --data-dir option and opening the knowledge base."""

from __future__ import annotations

from pathlib import Path

import click

from kb.config import Settings

DATA_DIR_HELP = "Index location. Default: $KB_DATA_DIR, else $XDG_DATA_HOME/kb, else ~/.local/share/kb."
data_dir_option = click.option(
    "--data-dir", type=click.Path(file_okay=False, path_type=Path),
    default=None, help=DATA_DIR_HELP,
)


def open_kb(data_dir: Path | None):
    """The knowledge base for this data dir (imported late: `kb --help` should not load numpy and faiss)."""
    from kb.service import KnowledgeBase

    return KnowledgeBase(Settings.from_env(data_dir=data_dir))
