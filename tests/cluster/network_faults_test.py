"""Network faults on emulated links (`tfhp.launch --inject`): a link down for less than
--peer_timeout_s is ridden through, a longer one ends the job naming the task (and a supervised
job recovers from it), and a NIC cut tenfold makes a straggler that a spare replica absorbs.
Root, namespaces and tc only."""
import pytest

from tests.cluster import jobs

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.usefixtures('links_available')]

# Steps of about 50 ms on every worker, so that a fault meets a job in its timed steps.
PACED = ['--display_every=1', '--straggler_delay_ms=50', '--peer_timeout_s=5',
         '--step_timeout_s=10']


def test_a_link_down_for_less_than_the_peer_timeout_is_ridden_through(tmp_path):
    # P = 10 s: a peer is read every P/4 and each read waits up to 2 s, so a silence of 2 s
    # may look 2 + 2.5 + 2 s long: still well under P.
    status, summary, output = jobs.launch_job(
        tmp_path, 1, 2, '--num_batches=40', '--straggler_workers=0,1', *PACED,
        '--peer_timeout_s=10', '--step_timeout_s=20',
        launcher_args=['--link_bandwidth=200mbit', '--inject=link_down:worker1@10+2'])
    assert status == 0, output[-3000:]
    fault, = summary['faults_injected']
    assert (fault['kind'], fault['task'], fault['global_step']) == ('link_down', 'worker 1', 10)
    assert fault['ended_s'] - fault['at_s'] == pytest.approx(2, abs=0.5)
    # Every worker took every step: nobody gave up on worker 1.
    assert all(t['global_step'] == 42 for t in summary['tasks']), summary['tasks']
    assert 'stopped answering' not in output


def test_a_link_down_for_longer_ends_the_job_naming_the_task_and_a_restart_recovers(tmp_path):
    train_dir = tmp_path / 'train'
    status, summary, output = jobs.launch_job(
        tmp_path, 1, 2, '--num_batches=30', '--straggler_workers=0,1', *PACED,
        '--train_dir=%s' % train_dir, '--save_model_steps=5',
        launcher_args=['--link_bandwidth=200mbit', '--inject=link_down:worker1@10+15',
                       '--max_restarts=1'])
    assert status == 0, output[-3000:]
    fault, = summary['recovery']['faults']
    # Cut off from every peer, worker 1 is the first to give up (after P = 5 s, while the
    # chief's step waits up to S = 10 s), and the launcher names it.
    assert fault['root_cause']['task'] == 'worker 1', fault
    assert 'lost ps task 0' in fault['root_cause']['last_line']
    assert 'worker task 1 at' in output and 'stopped answering' in output
    assert 0 <= fault['steps_redone'] <= 5
    assert summary['tasks'][0]['global_step'] == 32
    injected, = summary['faults_injected']
    assert injected['attempt'] == 1 and injected['for_s'] == 15
    # The attempt ended within its bound of the link going down: P, then the launcher's
    # settling wait for a root cause (5 s), and a margin for ending the tasks on 2 cores.
    assert fault['ended_after_s'] - injected['at_s'] < 5 + 5 + 10


def test_a_nic_cut_tenfold_makes_a_straggler_that_a_spare_absorbs(tmp_path):
    status, summary, output = jobs.launch_job(
        tmp_path, 1, 3, '--num_batches=60', '--straggler_workers=0,1,2',
        '--replicas_to_aggregate=2', *PACED,
        launcher_args=['--link_bandwidth=200mbit', '--inject=slow_link:worker2@5x10'])
    assert status == 0, output[-3000:]
    tasks = {t['task']: t for t in summary['tasks']}
    # Each step moves about 200 KB each way: about 80 ms at 20 Mbit/s against 8 ms.
    assert summary['links']['tasks']['worker 2']['link_bps'] == 2e7
    assert tasks['worker 2']['images_per_sec'] < 0.7 * min(
        tasks['worker %d' % w]['images_per_sec'] for w in (0, 1))
    # The steps go on at the two fast workers' pace: the slow one's gradients come late.
    assert tasks['worker 2']['dropped_gradients'] >= 15, tasks
    assert tasks['worker 0']['dropped_gradients'] + tasks['worker 1']['dropped_gradients'] < (
        tasks['worker 2']['dropped_gradients'])
