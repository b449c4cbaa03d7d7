"""REST face of the knowledge base: a bank's curated notes as pages in folders (written pages are
retained so that recall finds them; generated ones are kept current from a source query)."""

from __future__ import annotations

from fastapi import APIRouter, Query

from hindsight.api.deps import BankPath, EngineDep, PrincipalDep
from hindsight.engine.knowledge.pages import (
    FolderCreate,
    KnowledgeBundle,
    KnowledgeNode,
    KnowledgePage,
    KnowledgeSearch,
    KnowledgeTree,
    NodeDeleted,
    NodeUpdate,
    PageCreate,
    PageCreated,
    PageHits,
)

router = APIRouter(prefix="/v1/banks/{bank_id}/knowledge-base", tags=["knowledge base"])


@router.get("/tree", summary="The folders and pages, nested")
async def tree(bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> KnowledgeTree:
    return await eng.knowledge_tree(who, bank_id)


@router.post("/folders", status_code=201, summary="Make a folder")
async def create_folder(req: FolderCreate, bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> KnowledgeNode:
    return await eng.create_knowledge_folder(who, bank_id, req)


@router.post("/pages", status_code=201, summary="Write a page (retained into the bank), or have one generated")
async def create_page(req: PageCreate, bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> PageCreated:
    return await eng.create_knowledge_page(who, bank_id, req)


@router.get("/pages/{page_id}", summary="One page, with its content and as one markdown document")
async def get_page(page_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> KnowledgePage:
    return await eng.get_knowledge_page(who, bank_id, page_id)


@router.patch("/nodes/{node_id}", summary="Rename or move a folder or page, or change a page")
async def update_node(
    req: NodeUpdate, node_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep
) -> KnowledgeNode:
    return await eng.update_knowledge_node(who, bank_id, node_id, req)


@router.delete("/nodes/{node_id}", summary="Delete a folder or page and everything under it")
async def delete_node(node_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> NodeDeleted:
    return await eng.delete_knowledge_node(who, bank_id, node_id)


@router.get("/search", summary="Pages by relevance (full text and meaning, fused)")
async def search(bank_id: BankPath, who: PrincipalDep, eng: EngineDep, query: KnowledgeSearch = Query()) -> PageHits:
    return await eng.search_knowledge(who, bank_id, query)


@router.get("/export", summary="The knowledge base as markdown files")
async def export(bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> KnowledgeBundle:
    return await eng.export_knowledge(who, bank_id)
