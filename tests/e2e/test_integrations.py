"""Integrations built on Hindsight's client, unchanged, doing their store-and-recall path here:
hindsight-langgraph (a real LangGraph graph and its LangChain tools), hindsight-litellm (a real
litellm completion through the stub LLM, with memories injected and the conversation stored),
hindsight-agno and hindsight-haystack (their toolkits).

Not here: hindsight-crewai (crewai brings 120 packages, chromadb and lancedb among them) and
hindsight-autogen (autogen-core pins protobuf 5, below what onnx needs for our embedder).
"""

from __future__ import annotations

import uuid


def _unique(word: str) -> str:
    return f"{word}{uuid.uuid4().hex[:6]}"


async def test_langgraph_graph_recalls_what_it_retained(server, bank):
    from hindsight_client import Hindsight
    from hindsight_langgraph import create_hindsight_tools, create_recall_node, create_retain_node
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
    from langgraph.graph import END, START, MessagesState, StateGraph

    client = Hindsight(base_url=server.url)
    try:
        seen: list[list] = []

        def agent(state: MessagesState):
            seen.append(list(state["messages"]))
            return {"messages": [AIMessage(content="Noted.")]}

        builder = StateGraph(MessagesState)
        builder.add_node("recall", create_recall_node(client=client, bank_id=bank))
        builder.add_node("agent", agent)
        builder.add_node("retain", create_retain_node(client=client, bank_id=bank))
        builder.add_edge(START, "recall")
        builder.add_edge("recall", "agent")
        builder.add_edge("agent", "retain")
        builder.add_edge("retain", END)
        graph = builder.compile()

        marker = _unique("quokka")
        await graph.ainvoke({"messages": [HumanMessage(content=f"My favourite animal is the {marker}.")]})
        await graph.ainvoke({"messages": [HumanMessage(content=f"Which animal do I like, the {marker}?")]})
        injected = [m.content for m in seen[-1] if isinstance(m, SystemMessage)]
        assert injected and marker in injected[0], seen[-1]

        tools = {t.name: t for t in create_hindsight_tools(client=client, bank_id=bank)}
        config = {"configurable": {}}
        assert (
            await tools["hindsight_retain"].ainvoke({"content": "The user's cat is called Biscuit."}, config)
            == "Memory stored successfully."
        )
        found = await tools["hindsight_recall"].ainvoke({"query": "What is the cat called?"}, config)
        assert "Biscuit" in found
        assert "Biscuit" in await tools["hindsight_reflect"].ainvoke({"query": "What is the cat called?"}, config)
    finally:
        await client.aclose()


def test_litellm_completion_injects_memories_and_stores_the_conversation(server, api, stub, bank):
    import hindsight_litellm
    import litellm

    marker = _unique("zeppelin")
    hindsight_litellm.configure(
        hindsight_api_url=server.url,
        bank_id=bank,
        session_id="conv-1",
        sync_storage=True,
        mission="Remembers the user's hobbies.",
    )
    hindsight_litellm.enable()
    try:
        kwargs = {"model": "openai/stub-model", "api_base": stub.base_url, "api_key": "stub-key"}
        litellm.completion(messages=[{"role": "user", "content": f"I build a model {marker} on weekends."}], **kwargs)
        litellm.completion(messages=[{"role": "user", "content": "What do I build on weekends?"}], **kwargs)
        sent = stub.requests[-1]["messages"]
        assert sent[0]["role"] == "system" and marker in sent[0]["content"], sent  # recalled and injected
        memories = hindsight_litellm.recall("What do I build?")
        assert any(marker in m.text for m in memories)
    finally:
        hindsight_litellm.disable()
        hindsight_litellm.cleanup()
    doc = api.get(f"/v1/default/banks/{bank}/documents/conv-1").json()
    assert marker in doc["original_text"] and "What do I build on weekends?" in doc["original_text"]  # accumulated
    assert api.get(f"/v1/default/banks/{bank}").json()["mission"] == "Remembers the user's hobbies."


def test_agno_toolkit_stores_and_recalls(server, bank):
    from agno.run.base import RunContext
    from hindsight_agno import HindsightTools, memory_instructions

    tools = HindsightTools(bank_id=bank, hindsight_api_url=server.url, tags=["agno"])
    ctx = RunContext(run_id="r1", session_id="s1", user_id="u1")
    assert tools.retain_memory(ctx, "The user prefers aisle seats on flights.") == "Memory stored successfully."
    assert "aisle seats" in tools.recall_memory(ctx, "What seat does the user prefer?")
    assert "aisle seats" in tools.reflect_on_memory(ctx, "What seat does the user prefer?")
    assert "aisle seats" in memory_instructions(bank_id=bank, hindsight_api_url=server.url, query="seat preference")


def test_haystack_tools_store_and_recall(server, bank):
    from hindsight_haystack import create_hindsight_tools

    tools = {
        t.name: t
        for t in create_hindsight_tools(bank_id=bank, hindsight_api_url=server.url, mission="Knows the user's diet.")
    }
    assert tools["retain_memory"].invoke(content="The user is vegetarian.") == "Memory stored successfully."
    assert "vegetarian" in tools["recall_memory"].invoke(query="What does the user eat?")
    assert "vegetarian" in tools["reflect_on_memory"].invoke(query="What does the user eat?")
