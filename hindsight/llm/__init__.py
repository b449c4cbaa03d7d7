"""LLM access through litellm."""

from hindsight.llm.client import CAUSE_WORDS, CAUSES, LLM, Cause, LLMError, Rejected, Usage, deadline

__all__ = ["CAUSES", "CAUSE_WORDS", "LLM", "Cause", "LLMError", "Rejected", "Usage", "deadline"]
