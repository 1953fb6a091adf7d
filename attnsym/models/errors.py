"""Errors of :mod:`attnsym.models`: a model folder that cannot be used, a text a model cannot route.

Each derives from :class:`~attnsym.errors.AttnsymError` and from the built-in exception a user
would catch (``FileNotFoundError`` for a missing file, ``ValueError`` for the rest), and its
message names the argument, the value and what was expected.
"""

from __future__ import annotations

from ..errors import AttnsymError

__all__ = ["CorruptWeightsError", "ModelError", "ModelFileMissing", "NoLMHeadError", "TextError", "TokenNotFoundError",
           "UnsupportedModelError"]


class ModelError(AttnsymError, ValueError):
    """A model name or folder that cannot be loaded (the base of the loading errors)."""


class ModelFileMissing(ModelError, FileNotFoundError):
    """The model folder lacks a file it needs (``config.json``, ``model.safetensors``, ``tokenizer.json``)."""


class UnsupportedModelError(ModelError):
    """``config.json`` describes an architecture or option attnsym does not implement."""


class CorruptWeightsError(ModelError):
    """``model.safetensors`` cannot be read, or lacks / misshapes a tensor the architecture needs."""


class NoLMHeadError(ModelError):
    """Logits asked of a model attnsym runs without a language-model head (an encoder, a base model saved headless)."""


class TextError(AttnsymError, ValueError):
    """A text the model cannot route: empty, or longer than the model's maximum positions."""


class TokenNotFoundError(TextError, LookupError):
    """A word asked for is not in the sentence (the message lists the words that are)."""
