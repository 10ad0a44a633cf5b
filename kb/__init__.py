"""kb: a bilingual troubleshooting knowledge base for ML training and serving errors.

The front doors (CLI in `kb_cli`, HTTP API and bots in `api`) only call `KnowledgeBase`.
"""

from .config import RankingWeights, Settings
from .errors import KbError

__version__ = "0.1.0"


def __getattr__(name: str):
    # Lazy: importing kb must stay cheap for the CLI's --help and the remote client.
    if name == "KnowledgeBase":
        from .service import KnowledgeBase

        return KnowledgeBase
    raise AttributeError(name)


__all__ = ["KnowledgeBase", "KbError", "RankingWeights", "Settings", "__version__"]
