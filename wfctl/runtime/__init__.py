"""wfctl's durable workflow runtime: Python workflows on the world schema.

Every state transition is one transaction (entity row and its event together), written
through the shared event writer; see docs/runtime.md. The names exported here are the
authoring API's (`wfctl.runtime.api.__all__`).
"""

from wfctl.runtime.api import *  # noqa: F403
from wfctl.runtime.api import __all__ as __all__
