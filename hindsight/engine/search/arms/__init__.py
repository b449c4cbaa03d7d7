"""Recall's arms, one module each: semantic, keyword and temporal, and how an arm's statement runs
(running.py). Each returns the ids of its hits in rank order: the candidates that recall scores
and ranks (details.py, fusion.py)."""
