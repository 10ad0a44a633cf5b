"""Domain errors. Front doors turn these into exit codes or HTTP statuses."""


class KbError(Exception):
    """Base class: the message is meant for a person and says what to do."""


class ArticleError(KbError):
    """An article file that cannot be ingested; `path: line N: reason`."""

    def __init__(self, path: str, reason: str, line: int | None = None):
        self.path, self.reason, self.line = path, reason, line
        where = f"{path}: line {line}" if line else path
        super().__init__(f"{where}: {reason}")


class IndexMissingError(KbError):
    """No index in the data dir yet."""


class IndexMismatchError(KbError):
    """The index was built by another format version or embedding model."""


class IndexBusyError(KbError):
    """Another writer holds the data dir's lock."""


class QueryError(KbError):
    """The query is empty or too large."""


class NotFoundError(KbError):
    """No article with that id."""


class QueryTooLargeError(QueryError):
    """The query is over the size limit."""
