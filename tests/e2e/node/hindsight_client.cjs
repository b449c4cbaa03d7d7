// Hindsight's TypeScript client (@vectorize-io/hindsight-client, unchanged) against our server.
// Run by tests/test_typescript_client.py: HINDSIGHT_URL, BANK; prints one JSON line of findings.
const assert = require("node:assert/strict");
const { HindsightClient } = require("@vectorize-io/hindsight-client");

(async () => {
  const c = new HindsightClient({ baseUrl: process.env.HINDSIGHT_URL });
  const bank = process.env.BANK;
  const version = await c.getVersion();
  const profile = await c.createBank(bank, { name: "TS bank", reflectMission: "Knows Lena", dispositionEmpathy: 5 });
  assert.equal(profile.disposition.empathy, 5);
  const retained = await c.retain(bank, "Lena plays the cello in a string quartet.", {
    tags: ["music"], metadata: { source: "ts" }, documentId: "ts-doc", timestamp: "2024-02-01T12:00:00Z",
  });
  assert.equal(retained.success, true);
  await c.retainBatch(bank, [{ content: "Lena rehearses on Tuesdays." }], { async: true });
  const recalled = await c.recall(bank, "What instrument does Lena play?", { tags: ["music"], tagsMatch: "any_strict" });
  assert.equal(recalled.results[0].text, "Lena plays the cello in a string quartet.");
  assert.deepEqual(recalled.results[0].metadata, { source: "ts" });
  const answer = await c.reflect(bank, "What instrument does Lena play?");
  assert.match(answer.text, /cello/);
  const listed = await c.listMemories(bank, { q: "cello" });
  assert.equal(listed.total, 1);
  const doc = await c.getDocument(bank, "ts-doc");
  assert.equal(doc.original_text, "Lena plays the cello in a string quartet.");
  const model = await c.createMentalModel(bank, "Lena", "What does Lena play?", { id: "lena", tags: ["music"] });
  assert.equal(model.mental_model_id, "lena");
  const models = await c.listMentalModels(bank);
  assert.deepEqual(models.items.map((m) => m.id), ["lena"]);
  let refused = null;
  try {
    await c.recall(bank, "x", { tagGroups: [{ tags: ["music"], match: "any" }] });
  } catch (e) {
    refused = String(e.message || e);
  }
  assert.ok(refused && /compound tag filters/.test(refused), refused);
  await c.deleteMentalModel(bank, "lena");
  await c.deleteBank(bank);
  console.log(JSON.stringify({ ok: true, api_version: version.api_version, refused }));
})().catch((e) => {
  console.log(JSON.stringify({ ok: false, error: String(e && e.stack || e) }));
  process.exit(1);
});
