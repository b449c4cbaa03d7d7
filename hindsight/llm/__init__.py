"""LLM access through litellm."""

from .client import LLM, LLMError, Usage

__all__ = ["LLM", "LLMError", "Usage"]
