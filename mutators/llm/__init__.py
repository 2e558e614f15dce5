"""The language-model operator: client (openai), reply cache, prompts, modes, the operator.

Importing this package registers the operator's factory (`gi.mutators.base.CONFIGURED`, "llm"),
which builds it from a config's `[llm]` section.
"""

from gi.mutators.base import CONFIGURED, Member, OfflineMissError, Outcome
from gi.mutators.llm.cache import ReplyCache, request_key
from gi.mutators.llm.client import (
    Budget,
    LLMClient,
    LLMSettings,
    LLMStoppedError,
    RequestPool,
    Usage,
)
from gi.mutators.llm.factory import operator_for_run
from gi.mutators.llm.models import Models
from gi.mutators.llm.operator import LLMOperator
from gi.mutators.llm.prompts import GOALS, MODES, Prompts
from gi.mutators.llm.proposals import Pending, Proposal
from gi.mutators.llm.replies import extract_function
from gi.mutators.llm.stats import Counts, LLMStats

CONFIGURED.add(LLMOperator.name, operator_for_run)

__all__ = [
    "GOALS",
    "MODES",
    "Budget",
    "Counts",
    "LLMClient",
    "LLMOperator",
    "LLMSettings",
    "LLMStats",
    "LLMStoppedError",
    "Member",
    "Models",
    "OfflineMissError",
    "Outcome",
    "Pending",
    "Prompts",
    "Proposal",
    "ReplyCache",
    "RequestPool",
    "Usage",
    "extract_function",
    "request_key",
]
