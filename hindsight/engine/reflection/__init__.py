"""Reflect (an answer grounded in a recall and the closest mental models) and mental models
(named queries whose content reflect keeps current). Imports search, banks, queue and rules."""
