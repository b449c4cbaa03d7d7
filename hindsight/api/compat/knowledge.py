"""The knowledge base in the reference's shape. Its pages are generated from a source query (a
mental model each), as the reference's are; pages written by hand, which our own API and MCP
tools also make, read the same way here (no mental model, `description` null)."""

from __future__ import annotations

from fastapi import APIRouter, Query

from hindsight.api.compat import convert
from hindsight.api.compat import schemas as M
from hindsight.api.deps import BankPath, EngineDep, PrincipalDep
from hindsight.engine.knowledge.pages import FolderCreate, KnowledgeSearch, NodeUpdate, PageCreate
from hindsight.engine.rules.validation import parse

router = APIRouter(prefix="/v1/default/banks/{bank_id}/knowledge-base", tags=["Hindsight-compatible: knowledge base"])


@router.get("/tree", response_model=M.KnowledgeTreeOut, summary="The folders and pages, nested")
async def get_tree(bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    return convert.knowledge_tree(await eng.knowledge_tree(who, bank_id))


@router.post("/folders", status_code=201, response_model=M.KnowledgeNodeOut, summary="Make a folder")
async def create_folder(body: M.FolderIn, bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    req = parse(FolderCreate, dict(name=body.name, parent_id=body.parent_id))
    return convert.knowledge_node(await eng.create_knowledge_folder(who, bank_id, req))


@router.post("/pages", status_code=201, response_model=M.PageCreatedOut, summary="Make a page from a source query")
async def create_page(body: M.PageIn, bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    made = await eng.create_knowledge_page(who, bank_id, parse(PageCreate, convert.page_create(body)))
    return M.PageCreatedOut(
        page_id=made.page_id, mental_model_id=made.mental_model_id or "", operation_id=made.operation_id
    )


@router.get("/export", response_model=M.BundleOut, summary="The knowledge base as markdown files")
async def export(bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    return convert.bundle(await eng.export_knowledge(who, bank_id))


@router.get("/search", response_model=M.PageSearchOut, summary="Pages by relevance")
async def search(
    bank_id: BankPath,
    who: PrincipalDep,
    eng: EngineDep,
    q: str = Query(min_length=1),
    limit: int = Query(10, ge=1, le=50),
):
    found = await eng.search_knowledge(who, bank_id, parse(KnowledgeSearch, dict(query=q, limit=limit)))
    return convert.page_hits(found)


@router.get("/pages/{page_id}", response_model=M.KnowledgePageOut, summary="One page as a markdown document")
async def get_page(page_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    return convert.knowledge_page(await eng.get_knowledge_page(who, bank_id, page_id))


@router.patch("/nodes/{node_id}", response_model=M.KnowledgeNodeOut, summary="Rename, move or change a node")
async def update_node(node_id: str, body: M.NodePatch, bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    req = parse(NodeUpdate, convert.node_update(body))
    return convert.knowledge_node(await eng.update_knowledge_node(who, bank_id, node_id, req))


@router.delete("/nodes/{node_id}", summary="Delete a folder or page and everything under it")
async def delete_node(node_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> dict:
    await eng.delete_knowledge_node(who, bank_id, node_id)
    return {"status": "deleted"}
