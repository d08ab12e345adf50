"""Name scopes of the stages of a step.

Every builder in tfhp puts its ops under one of these scopes so that the trace analyser
(`tfhp.trace`) can attribute op time to a stage by name alone. Tower ops live under
`tower_<t>/<stage>`.
"""

INPUT = 'input'            # reading records
PREPROCESS = 'preprocess'  # decode, crop, flip, resize, parallel_stack
STAGING = 'staging'        # StagingArea put/get (host->device copies)
FORWARD = 'forward'        # model + loss
BACKWARD = 'backward'      # tf.gradients
AGGREGATE = 'aggregate'    # gradient all-reduce / summing on the parameter server
APPLY = 'apply'            # optimizer update
TOWER = 'tower_%d'

STAGES = (INPUT, PREPROCESS, STAGING, FORWARD, BACKWARD, AGGREGATE, APPLY)


def tower(index):
    """Returns the name scope of tower `index`."""
    return TOWER % index
