"""Language analysis with no database: CJK text, Chinese names, entities found in text, and time
expressions. Pure functions over strings; imported by the engine, imports nothing of ours but
the foundations."""
