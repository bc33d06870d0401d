"""A built pipeline's knowledge bases and middlewares as AgentScope 2.x objects.

Needs the ``agentscope`` extra (``pip install 'ragflow-config[agentscope]'``);
nothing else in ragflow_config imports AgentScope. ::

    async with Pipeline.load("pipelines/chat.yaml").build() as built:
        native = built.as_agentscope()
        agent = agentscope.agent.Agent(
            name="helper", system_prompt="...", model=chat_model,
            toolkit=agentscope.tool.Toolkit(tools=await native.tools()),
            middlewares=native.middlewares,
        )

Every knowledge base becomes an ``agentscope.rag.KnowledgeBase`` whose
operations run on ours (our store, our embedding model, our retrieval, the
pipeline's ``metadata_filter``); every ``rag`` middleware becomes AgentScope's
own ``agentscope.middleware.RAGMiddleware`` over those handles, with the
pipeline's parameters.
"""

from ._bridge import AgentScopeObjects, as_agentscope, knowledge_base, middleware

__all__ = ["AgentScopeObjects", "as_agentscope", "knowledge_base", "middleware"]
