"""The rules every request is held to, whichever face it came through: the text rule, shared
fields (bank ids, tags, metadata, paging, confirmations), tag matching, and turning untrusted
input into request models with one wording of what is wrong. Imports errors only."""
