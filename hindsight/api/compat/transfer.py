"""Documents moved in the reference's transfer archive, and the files the server keeps for a bank.

An export is an operation writing the archive as a file of the bank; its status's
`result_metadata` gives `download_url`, served here by key. An import keeps the uploaded archive
with its operation and reads it in the background (engine/transfer/archive.py says what maps
onto what). The synchronous export the reference removed answers as there: 410, pointing at the
asynchronous one."""

from __future__ import annotations

from fastapi import APIRouter, File, Query, Request, UploadFile
from fastapi.responses import JSONResponse, StreamingResponse

from hindsight.api.compat import schemas as M
from hindsight.api.deps import BankPath, EngineDep, PrincipalDep
from hindsight.engine.banks.files import bank_of_key
from hindsight.engine.errors import InvalidArgument, NotFound
from hindsight.web.audit import about_bank

router = APIRouter(tags=["Hindsight-compatible: document transfer"])
BANK = "/v1/default/banks/{bank_id}/document-transfer"


@router.get(
    BANK,
    status_code=410,
    summary="Removed there as here: export with POST .../document-transfer/export",
    responses={410: {"description": "Use the asynchronous export"}},
)
async def export_removed(bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    eng.require(who, bank_id)
    message = (
        "synchronous document export is removed: POST /v1/default/banks/{bank}/document-transfer/export, poll "
        "GET /v1/default/banks/{bank}/operations/{operation_id}, then download result_metadata.download_url"
    )
    return JSONResponse({"error": "gone", "message": message, "detail": message}, status_code=410)


@router.post(
    f"{BANK}/export",
    status_code=202,
    response_model=M.Submitted202,
    summary="Export the bank's documents (facts, chunks, entity names) as a transfer archive, in the background",
)
async def export_documents(
    bank_id: BankPath,
    who: PrincipalDep,
    eng: EngineDep,
    document_id: list[str] | None = Query(None, description="Documents to export; omit for all."),
    include_observations: bool = Query(False, description="Accepted: this server keeps no observations."),
):
    if document_id is not None and not document_id:
        raise InvalidArgument("document_id: name at least one, or omit it for every document", "document_id")
    return M.Submitted202(operation_id=await eng.export_documents(who, bank_id, document_id))


@router.post(
    BANK,
    status_code=202,
    response_model=M.Submitted202,
    summary="Import a transfer archive's documents, in the background: re-embedded here, no LLM called",
)
async def import_documents(
    bank_id: BankPath,
    who: PrincipalDep,
    eng: EngineDep,
    file: UploadFile = File(..., description="A transfer archive (ZIP)."),
    on_conflict: str = Query("skip", description="skip | replace | new-id"),
):
    if on_conflict not in ("skip", "replace", "new-id"):
        raise InvalidArgument("on_conflict: must be skip, replace or new-id", "on_conflict")
    op = await eng.import_documents_archive(who, bank_id, file.file, file.filename or "transfer.zip", on_conflict)  # type: ignore[arg-type]
    return M.Submitted202(operation_id=op)


@router.get(
    "/v1/default/files/download/{key:path}",
    summary="A file kept for a bank (an export's archive), by the key in its operation's result",
    responses={200: {"content": {"application/zip": {}}, "description": "The file"}},
)
async def download_file(key: str, request: Request, who: PrincipalDep, eng: EngineDep):
    try:  # the bank the key names, on the audit record whether or not the download is allowed
        about_bank(request.scope, bank_of_key(key))
    except NotFound:
        pass
    f = await eng.bank_file(who, key)
    name = f.name.replace('"', "")

    async def body():
        # A file deleted while it is sent (its operation or bank went) ends short of its
        # Content-Length, which the client reports; the headers are gone, no error can follow.
        try:
            async for chunk in eng.bank_file_parts(f):
                yield chunk
        except NotFound:
            return

    return StreamingResponse(
        body(),
        media_type=f.media_type,
        headers={"Content-Length": str(f.size), "Content-Disposition": f'attachment; filename="{name}"'},
    )


@router.get("/v1/bank-template-schema", summary="The JSON Schema of a bank template (what POST .../import reads)")
async def template_schema() -> dict:
    schema = M.TemplateIn.model_json_schema()
    schema["description"] = (
        "A bank template: settings by Hindsight's names (`bank`), mental models matched by id (ours: `content` "
        "to start one with), directives (refused until this server keeps them)."
    )
    return schema
