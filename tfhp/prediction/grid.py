"""The step model's figures for a grid of settings (rates x ps counts x workers), each ps task
holding the bytes tfhp's placement gives it: what `python -m tfhp.predict` prints."""
from tfhp import modes
from tfhp.prediction import placement
from tfhp.prediction import step_model


def records(profile, workers, ps_counts, rates, variable_update, towers_per_worker=1,
            bus_bps=None, ps_bps=None, synchronous=True, protocol_s=0.0, fusion_bucket_bytes=0,
            partition_min_bytes=0, colocate_ps=False):
    """One record per (rate, ps, workers): the setting and its Prediction's figures; each ps
    task holds the bytes tfhp's placement gives it (`placement.ps_gradient_bytes`), on its own
    host or (colocate_ps) on a worker's.

    Args:
      rates: [(the rate as written, e.g. '1gbit', its bits per second)], the NICs' rates.
      (the others: `step_model.Cluster`'s and `step_model.predict`'s, by their names.)
    """
    rows = []
    uses_ps = modes.strategy(variable_update).uses_ps
    for rate, bps in rates:
        for ps in ps_counts:
            held = (tuple(placement.ps_gradient_bytes(profile, ps, partition_min_bytes))
                    if uses_ps else None)
            for w in workers:
                if colocate_ps and uses_ps and ps > w:
                    raise ValueError('--colocate_ps puts ps task k on worker k\'s host: '
                                     '--ps=%d is more than --workers=%d' % (ps, w))
                if colocate_ps and uses_ps and ps_bps:
                    raise ValueError('--ps_rate cannot apply with --colocate_ps: the ps tasks '
                                     'share their workers\' NICs')
                cluster = step_model.Cluster(num_workers=w, towers_per_worker=towers_per_worker,
                                             num_ps=ps, nic_bps=bps, ps_nic_bps=ps_bps,
                                             bus_bps=bus_bps, protocol_s=protocol_s,
                                             ps_gradient_bytes=held,
                                             ps_on_workers=colocate_ps and uses_ps)
                p = step_model.predict(profile, cluster, variable_update, synchronous,
                                       apply_s=profile.apply_s,
                                       fusion_bucket_bytes=fusion_bucket_bytes)
                rows.append({'model': profile.model, 'update': variable_update,
                             'rate': rate, 'ps': ps, 'workers': w,
                             'step_ms': 1000 * p.step_s, 'images_per_sec': p.images_per_sec,
                             'speedup': p.speedup, 'efficiency': p.efficiency,
                             'alone_images_per_sec': p.images_per_sec / p.speedup,
                             'pull_ms': 1000 * p.pull_s, 'push_tail_ms': 1000 * p.push_tail_s,
                             'update_ms': 1000 * p.update_s})
    return rows
