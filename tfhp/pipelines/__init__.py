"""Input pipelines: each turns a data source into one batch per tower (see `base.Pipeline`)."""
