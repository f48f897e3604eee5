from django.urls import path

from judgments import views, views_grader_tags, views_pool, views_scales

app_name = "judgments"
urlpatterns = [
    path("grade/", views.grade, name="grade"),
    path("grade/slots/<int:slot_id>/", views.slot, name="slot"),
    path("grade/slots/<int:slot_id>/skip/", views.slot_skip, name="skip"),
    # The result the grader is at, slot or gold probe alike (judgments.views' docstring).
    path("grade/results/<str:token>/", views.item, name="item"),
    path("grade/results/<str:token>/skip/", views.item_skip, name="item_skip"),
    path("grade/evaluations/<int:evaluation_id>/", views.evaluation_grade,
         name="evaluation_grade"),
    path("feedback/evaluations/<int:evaluation_id>/", views.feedback_list, name="feedback"),
    path("feedback/slots/<int:slot_id>/grade/", views.feedback_lead_grade, name="lead_grade"),
    path("feedback/slots/<int:slot_id>/reset/", views.feedback_reset, name="reset"),
    path("feedback/slots/<int:slot_id>/gold/", views.feedback_make_gold, name="make_gold"),
    path("pool/import/", views_pool.pool_import, name="pool_import"),
    path("pool/export/", views_pool.pool_export, name="pool_export"),
    path("scales/", views_scales.scale_list, name="scales"),
    path("scales/new/", views_scales.scale_create, name="scale_create"),
    path("scales/<int:scale_id>/", views_scales.scale_edit, name="scale_edit"),
    path("scales/<int:scale_id>/delete/", views_scales.scale_delete, name="scale_delete"),
    path("transformers/edit/", views_scales.transformer_edit, name="transformer_edit"),
    path("transformers/<int:transformer_id>/delete/", views_scales.transformer_delete,
         name="transformer_delete"),
    path("grader-tags/", views_grader_tags.grader_tags, name="grader_tags"),
    path("grader-tags/<int:user_id>/", views_grader_tags.grader_tags_update,
         name="grader_tags_update"),
]
