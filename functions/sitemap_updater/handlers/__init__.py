"""Lambda entry points: parse, call one use case, report partial batch failures."""
