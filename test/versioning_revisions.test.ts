// Revisions: list (limit, newest first), get, history, restore as a new head commit, and diff of two refs.
import { beforeAll, describe, expect, it } from 'vitest';
import { testDialects } from './support/server.js';
import { serverForSuite } from './support/suite.js';
import { A, commit, createAgent, mainBranchId, publish, putDraft } from './support/agents.js';

describe.each(testDialects())('revisions on %s', (dialect) => {
  const suite = serverForSuite(dialect);
  let agent: string;
  let main: string;
  let r1: any;
  let r2: any;
  let r3: any;
  const b = (branch: string) => `${A}/agent/${agent}/branches/${branch}`;

  beforeAll(async () => {
    agent = await createAgent(suite.server, { name: 'Versioned' });
    main = await mainBranchId(suite.server, agent);
    r1 = await commit(suite.server, agent, main, { prompt: 'You are Ava, a clinic receptionist.', firstMessage: 'Hello, clinic.' }, 'launch');
    r2 = await commit(suite.server, agent, main, { prompt: 'You are Ava. Keep answers short.', synthesizer: { speed: 1.4 } }, 'shorter');
    r3 = await commit(suite.server, agent, main, { defaultVariables: { clinic: 'Northside' } }, 'variables');
  });

  it('lists revisions newest first; limit=1 yields the newest', async () => {
    const all = await suite.server.request('GET', `${b(main)}/revisions`);
    expect(all.status).toBe(200);
    expect(all.body.data.total).toBe(3);
    expect(all.body.data.revisions.map((r: any) => r._id)).toEqual([r3._id, r2._id, r1._id]);
    const one = await suite.server.request('GET', `${b(main)}/revisions?limit=1`);
    expect(one.body.data.revisions.map((r: any) => r.revisionNumber)).toEqual([3]);
    const skipped = await suite.server.request('GET', `${b(main)}/revisions?limit=1&skip=2`);
    expect(skipped.body.data.revisions[0]._id).toBe(r1._id);
    for (const q of ['limit=0', 'limit=101', 'limit=abc', 'skip=-1']) expect((await suite.server.request('GET', `${b(main)}/revisions?${q}`)).status, q).toBe(400);
  });

  it('gets a revision with its resolved config; other branches and unknown ids are refused', async () => {
    const res = await suite.server.request('GET', `${b(main)}/revisions/${r2._id}`);
    expect(res.status).toBe(200);
    expect(res.body.data.revision).toMatchObject({ _id: r2._id, status: 'published', revisionNumber: 2, label: 'shorter', securityCheck: { status: 'passed' } });
    expect(res.body.data.resolvedConfig).toMatchObject({ prompt: 'You are Ava. Keep answers short.', firstMessage: 'Hello, clinic.' });
    expect(res.body.data.resolvedConfig.synthesizer.speed).toBe(1.4);
    const fork = (await suite.server.request('POST', `${A}/agent/${agent}/branches`, { body: { sourceBranchId: main, name: 'elsewhere' } })).body.data._id;
    const wrongBranch = await suite.server.request('GET', `${b(fork)}/revisions/${r2._id}`);
    expect(wrongBranch.status).toBe(400);
    expect((await suite.server.request('GET', `${b(main)}/revisions/0123456789abcdef01234567`)).status).toBe(404);
  });

  it('gives the history trail with the sections each commit changed', async () => {
    const res = await suite.server.request('GET', `${b(main)}/revisions/${r3._id}/history`);
    expect(res.status).toBe(200);
    expect(res.body.data.revision._id).toBe(r3._id);
    expect(res.body.data.publishedBy).toBe('bootstrap');
    const trail = res.body.data.trail.map((t: any) => [t.revision.revisionNumber, t.changedSections]);
    expect(trail[0]).toEqual([3, ['call_handling']]);
    expect(trail[1]).toEqual([2, ['workflow_prompt', 'voice']]);
    expect(trail[2][0]).toBe(1);
  });

  it('restores the first of three as a fourth whose content equals the first; old ids stay', async () => {
    const res = await suite.server.request('POST', `${b(main)}/revisions/${r1._id}/restore`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.state).toBe('committed');
    const r4 = res.body.data.revision;
    expect(r4).toMatchObject({ status: 'published', revisionNumber: 4, restoredFromLabel: 'launch', restoredFromRevisionId: r1._id, parentVersion: r3._id, isActive: true });
    expect(r4._id).not.toBe(r1._id);
    expect(r4.blocks).toEqual(r1.blocks);
    const c1 = (await suite.server.request('GET', `${b(main)}/revisions/${r1._id}`)).body.data;
    const c4 = (await suite.server.request('GET', `${b(main)}/revisions/${r4._id}`)).body.data;
    expect(c4.resolvedConfig).toEqual(c1.resolvedConfig);
    expect(c1.revision).toMatchObject({ _id: r1._id, revisionNumber: 1, label: 'launch' });
    const ids = (await suite.server.request('GET', `${b(main)}/revisions`)).body.data.revisions.map((r: any) => r._id);
    expect(ids).toEqual([r4._id, r3._id, r2._id, r1._id]);
    const served = (await suite.server.request('GET', `${A}/agent/${agent}`)).body.data;
    expect(served).toMatchObject({ activeVersionId: r4._id, prompt: 'You are Ava, a clinic receptionist.' });
    expect(served.synthesizer.speed).toBe(1.2);
    expect(served.defaultVariables).toEqual({});
  });

  it('restores a revision of another branch onto a fork; unknown sources are 404', async () => {
    const fork = (await suite.server.request('POST', `${A}/agent/${agent}/branches`, { body: { sourceBranchId: main, name: 'restore-target' } })).body.data._id;
    const res = await suite.server.request('POST', `${b(fork)}/revisions/${r2._id}/restore`, { body: { label: 'from main' } });
    expect(res.status, res.text).toBe(200);
    // A fork continues its source's numbering: Main's head is #4, so the fork's first commit is #5.
    expect(res.body.data.revision).toMatchObject({ branch: fork, revisionNumber: 5, label: 'from main', restoredFromRevisionId: r2._id, restoredFromLabel: 'shorter' });
    // The fork point is readable through the fork.
    const forkPoint = await suite.server.request('GET', `${b(fork)}/revisions/${res.body.data.revision.parentVersion}`);
    expect(forkPoint.status, forkPoint.text).toBe(200);
    expect(forkPoint.body.data.revision.revisionNumber).toBe(4);
    expect((await suite.server.request('POST', `${b(fork)}/revisions/0123456789abcdef01234567/restore`)).status).toBe(404);
  });

  it('diffs two revisions, a revision and a draft, and refs across branches', async () => {
    const diff = await suite.server.request('GET', `${A}/agent/${agent}/diff?a=${r1._id}&b=${r2._id}`);
    expect(diff.status).toBe(200);
    expect(diff.body.data.unchangedSections).toContain('call_handling');
    expect(diff.body.data.diffs).toEqual([
      { section: 'workflow_prompt', changes: [{ path: 'prompt', oldValue: 'You are Ava, a clinic receptionist.', newValue: 'You are Ava. Keep answers short.' }] },
      { section: 'voice', changes: [{ path: 'synthesizer.speed', oldValue: 1.2, newValue: 1.4 }] },
    ]);

    const fork = (await suite.server.request('POST', `${A}/agent/${agent}/branches`, { body: { sourceBranchId: main, name: 'diff-fork' } })).body.data._id;
    await putDraft(suite.server, agent, fork, { language: { default: 'es', supported: ['es', 'en'] } });
    const withDraft = await suite.server.request('GET', `${A}/agent/${agent}/diff?a=${r3._id}&b=${fork}:draft`);
    expect(withDraft.status, withDraft.text).toBe(200);
    const sections = withDraft.body.data.diffs.map((d: any) => d.section);
    expect(sections).toContain('language');
    const lang = withDraft.body.data.diffs.find((d: any) => d.section === 'language').changes;
    expect(lang).toEqual(expect.arrayContaining([{ path: 'language.default', oldValue: 'en', newValue: 'es' }]));

    const same = await suite.server.request('GET', `${A}/agent/${agent}/diff?a=${r1._id}&b=${r1._id}`);
    expect(same.body.data.diffs).toEqual([]);
    expect(same.body.data.unchangedSections).toHaveLength(14);

    expect((await suite.server.request('GET', `${A}/agent/${agent}/diff?a=${r1._id}`)).status).toBe(400);
    expect((await suite.server.request('GET', `${A}/agent/${agent}/diff?a=${r1._id}&b=${'x'.repeat(65)}`)).status).toBe(400);
    expect((await suite.server.request('GET', `${A}/agent/${agent}/diff?a=${r1._id}&b=0123456789abcdef01234567`)).status).toBe(404);
    expect((await suite.server.request('GET', `${A}/agent/${agent}/diff?a=${r1._id}&b=${main}:draft`)).status).toBe(404);
  });

  it('serialises restore and publish on one branch without gaps in numbering', async () => {
    const fork = (await suite.server.request('POST', `${A}/agent/${agent}/branches`, { body: { sourceBranchId: main, name: 'race' } })).body.data._id;
    await putDraft(suite.server, agent, fork, { firstMessage: 'Race draft.' });
    const results = await Promise.all([
      publish(suite.server, agent, fork),
      suite.server.request('POST', `${b(fork)}/revisions/${r1._id}/restore`),
      suite.server.request('POST', `${b(fork)}/revisions/${r2._id}/restore`),
    ]);
    expect(results.every((r) => [200, 409].includes(r.status))).toBe(true);
    for (const r of results.filter((x) => x.status === 409)) expect(r.body.error_type).toBe('publish_in_progress');
    const ok = results.filter((r) => r.status === 200).length;
    const start = (await suite.server.request('GET', b(fork))).body.data.branch.sourceRevisionId;
    const base = (await suite.server.request('GET', `${b(fork)}/revisions/${start}`)).body.data.revision.revisionNumber;
    const numbers = (await suite.server.request('GET', `${b(fork)}/revisions`)).body.data.revisions.map((r: any) => r.revisionNumber);
    expect(numbers).toEqual(Array.from({ length: ok }, (_, i) => base + ok - i));
  });
});
