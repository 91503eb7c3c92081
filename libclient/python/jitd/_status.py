"""jitd's status codes and the exception every failing call raises."""

import enum


class StatusCode(enum.IntEnum):
    """The codes of include/jitd/jitd.h (jitd_status_code_t)."""
    OK = 0
    INVALID_ARGUMENT = 1
    NOT_FOUND = 2
    ALREADY_EXISTS = 3
    RESOURCE_EXHAUSTED = 4
    FAILED_PRECONDITION = 5
    UNIMPLEMENTED = 6
    UNAVAILABLE = 7
    DEADLINE_EXCEEDED = 8
    INTERNAL = 9
    PERMISSION_DENIED = 10


class JitdError(Exception):
    """A jitd call failed: `code` (a StatusCode) and `message` (what was wrong
    and where, as the library or the daemon said it)."""

    def __init__(self, code, message):
        try:
            code = StatusCode(code)
        except ValueError:
            code = StatusCode.INTERNAL
        self.code = code
        self.message = message
        super().__init__("%s: %s" % (code.name, message))
