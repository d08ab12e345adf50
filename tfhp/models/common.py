"""Small pieces shared by several models: the classifier head and a chain of convolutions."""


def classifier(builder, x, num_classes, hidden_units=(), keep_prob=None):
    """Flattens `x`, applies hidden dense layers and returns linear logits.

    Dropout (when `keep_prob` is set) follows each hidden layer, or, with no hidden layer,
    precedes the logits, which is where the nets that have it put it.

    Args:
      builder: the LayerBuilder.
      x: a 4-D feature map or 2-D features.
      num_classes: width of the logits.
      hidden_units: widths of the ReLU dense layers before the logits.
      keep_prob: dropout keep probability, or None for no dropout.
    Returns:
      Logits of shape [batch, num_classes].
    """
    x = builder.flatten(x)
    if not hidden_units and keep_prob is not None:
        x = builder.dropout(x, keep_prob)
    for units in hidden_units:
        x = builder.dense(x, units)
        if keep_prob is not None:
            x = builder.dropout(x, keep_prob)
    return builder.dense(x, num_classes, activation=None)


def chain(conv, x, specs):
    """Applies `conv(x, filters, kernel, **kwargs)` for each spec in turn.

    Args:
      conv: a convolution function with LayerBuilder.conv's signature.
      x: the input tensor.
      specs: (filters, kernel) or (filters, kernel, kwargs) tuples.
    Returns:
      The output of the last convolution.
    """
    for spec in specs:
        filters, kernel = spec[:2]
        kwargs = spec[2] if len(spec) > 2 else {}
        x = conv(x, filters, kernel, **kwargs)
    return x
